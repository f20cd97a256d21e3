"""Saving and loading a DDP model: rank 0 writes, everybody waits, everybody reads.

All ranks hold the same parameters, so one file is enough: rank 0 saves, and
``dist.barrier()`` keeps the other ranks from reading before the file is complete.
``torch.load`` puts every tensor back on the device it was saved from — "cuda:0" for
a checkpoint written by rank 0 on GPU 0 — unless ``map_location`` says otherwise
(``{"cuda:0": f"cuda:{local_rank}"}``, or ``"cpu"``): without it, every rank would
load its copy onto rank 0's GPU.

The state dict of a wrapped model has its keys prefixed with ``module.`` (the
wrapper keeps the model as ``self.module``); ``ddp.module.state_dict()`` has the plain
keys, and ``consume_prefix_in_state_dict_if_present`` strips the prefix from a file
saved the other way.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
from torch.nn.parallel import DistributedDataParallel as DDP

from .ddp import ToyModel
from .launch import imports_first


@imports_first("torch._dynamo")  # what DDP imports as it wraps: once, before the ranks fork
def checkpoint_rank(directory: str) -> dict:
    """In a rank: wrap a ``ToyModel`` (rank-dependent seed) in DDP, save on rank 0, barrier, load.

    Returns what the rank saw: the saved keys, the locations ``map_location`` was called
    with, whether the loaded weights equal rank 0's and how many files exist.
    """
    rank = dist.get_rank()
    torch.manual_seed(rank)          # different models: DDP's wrap makes them rank 0's
    ddp = DDP(ToyModel())
    path = os.path.join(directory, "checkpoint.pt")
    if rank == 0:
        torch.save(ddp.state_dict(), path)
    dist.barrier()                   # nobody reads before rank 0 has finished writing
    seen = []

    def map_location(storage, location):  # torch.load calls it for every storage
        seen.append(location)
        return storage               # keep it where it is (on CPU here); return storage.cuda(k) to move it

    state = torch.load(path, map_location=map_location, weights_only=True)
    consume_prefix_in_state_dict_if_present(state, "module.")
    fresh = ToyModel()
    fresh.load_state_dict(state)
    equal = all(torch.equal(a, b) for a, b in zip(fresh.parameters(), ddp.module.parameters()))
    return {"keys": list(torch.load(path, weights_only=True))[:2], "locations": sorted(set(seen)),
            "equal to the DDP model": equal, "files": len(os.listdir(directory))}
