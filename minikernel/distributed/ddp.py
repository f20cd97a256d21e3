"""DistributedDataParallel on CPU: the same parameters as one process on the whole batch.

Each rank holds a full copy of the model and a slice of every batch. During
``backward()`` DDP allreduces the gradients (in buckets, overlapped with the rest
of the backward pass) and divides by the world size, so every rank steps with the
gradient of the *mean* loss over the whole batch. With equal slices and a
mean-reduced loss, that is exactly the gradient one process computes on the full
batch — so the parameters stay equal to single-process training, up to float
rounding.

Also: DDP broadcasts rank 0's parameters and buffers when it wraps the model, so
ranks that built their models with different seeds still start identical.

The toy model is the one from PyTorch's DDP tutorial: Linear(10, 10), ReLU, Linear(10, 5).
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .launch import imports_first


class ToyModel(nn.Module):
    """Linear(10, 10) -> ReLU -> Linear(10, 5)."""

    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net2(self.relu(self.net1(x)))


def toy_batches(steps: int, batch: int = 20, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``steps`` (inputs, targets) batches of ``batch`` rows, the same in every process."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 10, generator=g), torch.randn(batch, 5, generator=g)) for _ in range(steps)]


def train_single(steps: int = 5, lr: float = 0.1, seed: int = 0) -> list[torch.Tensor]:
    """Train ``ToyModel`` in this process on the full batches; return its parameters."""
    torch.manual_seed(seed)
    model = ToyModel()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for x, y in toy_batches(steps, seed=seed + 1):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


@imports_first("torch._dynamo")  # what DDP imports as it wraps: once, before the ranks fork
def train_ddp_rank(steps: int = 5, lr: float = 0.1, seed: int = 0) -> dict:
    """In a rank: train ``ToyModel`` wrapped in DDP on this rank's slice of each batch.

    Every rank but 0 builds its model with a *different* seed, to show that DDP's
    broadcast at wrap time makes them equal.

    Returns a dict with ``same_start`` (were the parameters already equal to rank
    0's before wrapping, and after) and ``params`` (after training).
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(seed if rank == 0 else seed + 1000 + rank)
    model = ToyModel()
    before = torch.cat([p.detach().flatten() for p in model.parameters()])
    ddp = DDP(model)  # broadcasts rank 0's parameters to every rank
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    starts = [torch.empty_like(before) for _ in range(world)]
    dist.all_gather(starts, before)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr)
    for x, y in toy_batches(steps, seed=seed + 1):
        mine = slice(rank * len(x) // world, (rank + 1) * len(x) // world)
        optimizer.zero_grad()
        nn.functional.mse_loss(ddp(x[mine]), y[mine]).backward()  # gradients allreduced (averaged) here
        optimizer.step()
    return {"same_before_wrap": torch.equal(before, starts[0]), "same_after_wrap": torch.equal(after, starts[0]),
            "params": [p.detach().clone() for p in model.parameters()]}
