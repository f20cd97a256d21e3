"""Run torch's DDP and ``mini_ddp`` side by side in a rank; record what each did.

Used by chapter 07 and its tests: both wrap copies of one model, see the same
batches (each rank its own slice), take the same SGD steps, and report per
iteration the gradients, and per allreduce the bucket and its parameters
(torch's through a comm hook, which sees every ``GradBucket`` it reduces).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as TorchDDP

from .launch import imports_first
from .mini_ddp import DistributedDataParallel


class TwoBranches(nn.Module):
    """Two Linear branches summed, then a head. ``swap=True`` runs branch ``b`` before ``a``
    in the forward, which changes the order in which their gradients become ready."""

    def __init__(self, width: int = 8):
        super().__init__()
        self.a = nn.Linear(width, width)
        self.b = nn.Linear(width, width)
        self.head = nn.Linear(width, 2)

    def forward(self, x: torch.Tensor, swap: bool = False) -> torch.Tensor:
        if swap:
            hb = self.b(x)
            ha = self.a(x)
        else:
            ha = self.a(x)
            hb = self.b(x)
        return self.head(torch.tanh(ha + hb))


def batches(steps: int, batch: int = 12, width: int = 8, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The same ``steps`` (input, target) batches in every process."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, width, generator=g), torch.randn(batch, 2, generator=g)) for _ in range(steps)]


def logging_hook(state, bucket):  # no annotations: DDP checks that any there are say dist.GradBucket
    """A comm hook doing what torch's default does (SUM of the pre-divided bucket), and recording
    ``(iteration, bucket index, parameter indices)`` in ``state["log"]``."""
    state["log"].append((state["iteration"], bucket.index(), [state["names"][p] for p in bucket.parameters()]))
    fut = dist.all_reduce(bucket.buffer().div_(dist.get_world_size()), async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


@imports_first("torch._dynamo")  # what DDP imports as it wraps: once, before the ranks fork
def train(which: str, plan: list[dict], bucket_cap_mb: float | None = 0.0005, allreduce: Callable | None = None,
          seed: int = 0) -> dict[str, Any]:
    """In a rank: train ``TwoBranches`` wrapped in torch's DDP (``which="torch"``) or mini_ddp.

    ``plan`` holds one dict per backward: ``swap`` (branch order), ``no_sync`` (forward
    and backward inside ``no_sync()``), ``step`` (take an SGD step and zero the grads
    after this backward). Returns the bucket log, the gradients after every backward
    and the final parameters. Rank ``r`` trains on rows ``r::world`` of each batch.
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(seed)
    model = TwoBranches()
    names = {p: i for i, p in enumerate(model.parameters())}
    log: list = []
    state = {"iteration": 0, "log": log, "names": names}
    if which == "torch":
        ddp = TorchDDP(model, bucket_cap_mb=bucket_cap_mb)
        ddp.register_comm_hook(state, logging_hook)
    elif which == "mini":
        ddp = DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb, allreduce=allreduce or dist.all_reduce)
    else:
        raise ValueError(f"which must be 'torch' or 'mini', not {which!r}")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    grads = []
    synced = 0
    for (x, y), step in zip(batches(len(plan)), plan):
        context = ddp.no_sync() if step.get("no_sync") else contextlib.nullcontext()
        with context:
            loss = nn.functional.mse_loss(ddp(x[rank::world], swap=step.get("swap", False)), y[rank::world])
            loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        if not step.get("no_sync"):
            synced += 1
            state["iteration"] = synced
        if step.get("step", True):
            optimizer.step()
            optimizer.zero_grad()
    if which == "mini":
        log = list(ddp.reducer.log)
    return {"log": log, "grads": grads, "params": [p.detach().clone() for p in model.parameters()]}

