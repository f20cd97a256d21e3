"""A model cut in two, each half in its own process — and DDP around the halves.

**Backward through a cut.** Split ``z = f2(f1(x))`` at ``y = f1(x)``: give the second
half ``y1 = y.detach().requires_grad_()``, a new leaf. ``z.backward()`` stops at
``y1`` and leaves ``dz/dy`` in ``y1.grad``; ``y.backward(y1.grad)`` carries it through
the first half. The gradients equal those of ``z.backward()`` on the uncut graph (the
chain rule, one vector-Jacobian product at a time). When the halves live in two
processes (or on two GPUs), ``y`` is sent forward and ``y1.grad`` sent back: that is
model (pipeline) parallelism.

On GPUs, PyTorch's DDP tutorial keeps both halves in one process on two devices
(``ToyMpModel``: ``net1`` on ``dev0``, ``net2`` on ``dev1``, DDP without
``device_ids``). Without GPUs, here each half is a rank: with 4 ranks, ranks (0, 1)
and (2, 3) are two pipelines; rank ``2p + s`` holds stage ``s`` of pipeline ``p``,
and each stage is wrapped in DDP over the group of the ranks holding that same stage
(``dist.new_group([s, 2 + s])``), which averages its gradients across the pipelines.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .ddp import ToyModel, toy_batches
from .launch import imports_first


def stages(model: ToyModel) -> list[nn.Module]:
    """``ToyModel`` cut after its ReLU: ``[net1 -> relu, net2]``."""
    return [nn.Sequential(model.net1, model.relu), model.net2]


def _pipeline_step(stage: nn.Module, s: int, peer: int, x: torch.Tensor, y: torch.Tensor) -> None:
    """Forward and backward of one stage; activations go to ``peer``, their gradient comes back."""
    if s == 0:
        h = stage(x)
        dist.send(h.detach().contiguous(), peer)
        grad = torch.empty_like(h)
        dist.recv(grad, peer)
        h.backward(grad)          # the second half of the backward through the cut
    else:
        h1 = torch.empty(x.shape[0], 10)
        dist.recv(h1, peer)
        h1.requires_grad_()       # a new leaf: the cut
        nn.functional.mse_loss(stage(h1), y).backward()
        dist.send(h1.grad, peer)  # dz/dh goes back to the first half


@imports_first("torch._dynamo")  # what DDP imports as it wraps: once, before the ranks fork
def train_pipeline_rank(steps: int = 3, lr: float = 0.1, seed: int = 0, ddp: bool = True) -> list[torch.Tensor]:
    """In a rank of a world of 2 (one pipeline) or 4 (two pipelines + DDP per stage): train this
    rank's stage of ``ToyModel`` on its pipeline's slice of each batch; return the stage's parameters.

    The result equals ``ddp.train_single(steps, lr, seed)``'s parameters of that stage.
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    if world not in (2, 4):
        raise ValueError(f"train_pipeline_rank runs with 2 ranks (one pipeline) or 4 (two), not {world}")
    pipelines = world // 2
    p, s = divmod(rank, 2)
    torch.manual_seed(seed)
    stage = stages(ToyModel())[s]
    groups = [dist.new_group([t, 2 + t]) for t in (0, 1)] if pipelines == 2 else None  # every rank creates both
    wrapped = DDP(stage, process_group=groups[s]) if (ddp and groups) else stage
    optimizer = torch.optim.SGD(stage.parameters(), lr=lr)
    for x, y in toy_batches(steps, seed=seed + 1):
        mine = slice(p * len(x) // pipelines, (p + 1) * len(x) // pipelines)
        optimizer.zero_grad()
        _pipeline_step(wrapped, s, rank + 1 - 2 * s, x[mine], y[mine])
        optimizer.step()
    return [t.detach().clone() for t in stage.parameters()]
