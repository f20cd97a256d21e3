"""The DDP tutorial's ``ToyMpModel``: one process, the model over two devices, then DDP around it.

PyTorch's DDP tutorial puts ``net1`` on ``dev0`` and ``net2`` on ``dev1`` of one
process and moves the activations between them in ``forward`` (``x.to(dev1)``).
Wrapped in DDP, such a multi-device module takes no ``device_ids``: DDP cannot
scatter the input to one device, the module itself says where each piece runs.

torch has one CPU device (``torch.device("cpu", 1)`` is still the CPU), so here
both devices are ``"cpu"`` when training; ``"meta"`` (tensors with a shape and no
data) as ``dev1`` shows where the ``.to(dev1)`` is needed and what DDP checks.

Also DDP's checks of ``device_ids`` (``torch/nn/parallel/distributed.py``): older
releases let one process drive several GPUs (``device_ids=[0, 1, 2, 3]``, DDP
replicating the module inside the process like DataParallel); current DDP takes
``None`` or one device, and refuses a list of several before it looks at any GPU.
"""
from __future__ import annotations

import re

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .ddp import toy_batches
from .launch import imports_first


class ToyMpModel(nn.Module):
    """The tutorial's model: ``net1`` (Linear(10, 10)) on ``dev0``, ``net2`` (Linear(10, 5)) on ``dev1``.

    Built in the order of ``ddp.ToyModel`` (net1, relu, net2), so with the same seed
    it starts with the same weights.
    """

    def __init__(self, dev0: str | torch.device, dev1: str | torch.device):
        super().__init__()
        self.dev0, self.dev1 = torch.device(dev0), torch.device(dev1)
        self.net1 = nn.Linear(10, 10).to(self.dev0)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5).to(self.dev1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.net1(x.to(self.dev0)))
        return self.net2(x.to(self.dev1))  # the activations move to the second device


def without_the_move(model: ToyMpModel, x: torch.Tensor) -> torch.Tensor:
    """``model``'s forward with the ``.to(dev1)`` left out: fails when the devices differ."""
    return model.net2(model.relu(model.net1(x.to(model.dev0))))


def error_text(fn, *args, **kwargs) -> str:
    """``"ExceptionType: message"`` of what ``fn(*args, **kwargs)`` raises (``"no error"`` if nothing)."""
    try:
        fn(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - the text is the point
        return f"{type(err).__name__}: {str(err).strip()}"
    return "no error"


@imports_first("torch._dynamo")  # what DDP imports as it wraps: once, before the ranks fork
def train_mp_ddp_rank(steps: int = 3, lr: float = 0.1, seed: int = 0) -> list[torch.Tensor]:
    """In a rank: the tutorial's ``DDP(ToyMpModel(dev0, dev1))`` without ``device_ids``, on
    this rank's slice of each batch; return the parameters (equal to ``ddp.train_single``'s)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(seed)
    model = ToyMpModel("cpu", "cpu")
    ddp = DDP(model)  # no device_ids: a multi-device module
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr)
    for x, y in toy_batches(steps, seed=seed + 1):
        mine = slice(rank * len(x) // world, (rank + 1) * len(x) // world)
        optimizer.zero_grad()
        out = ddp(x[mine])
        nn.functional.mse_loss(out, y[mine].to(out.device)).backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


@imports_first("torch._dynamo")  # what DDP imports as it wraps: once, before the ranks fork
def ddp_refusals() -> dict[str, str]:
    """In a rank (one is enough): what DDP says to each way of wrapping that it refuses.

    * ``device_ids=[0, 1]``: one process over two devices (the old single-process,
      multi-device mode);
    * ``device_ids=[0]`` around a CPU module (device_ids are for GPU modules);
    * a module over two device *types* (``cpu`` and ``meta``; the set in the message
      is printed sorted).
    """
    return {"DDP(model, device_ids=[0, 1])": error_text(DDP, ToyMpModel("cpu", "cpu"), device_ids=[0, 1]),
            "DDP(model, device_ids=[0])": error_text(DDP, ToyMpModel("cpu", "cpu"), device_ids=[0]),
            "DDP(ToyMpModel('cpu', 'meta'))": _sorted_set(error_text(DDP, ToyMpModel("cpu", "meta")))}


def _sorted_set(text: str) -> str:
    """Write torch's ``{'meta', 'cpu'}`` in sorted order (a set's order changes from run to run)."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)
