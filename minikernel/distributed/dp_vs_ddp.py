"""DataParallel (one process, a thread per replica) against DDP (a process per replica), on this machine.

**Time per step.** The same model, batch and SGD step, three ways: one process on
the whole batch (the reference), ``data_parallel.DataParallel`` with ``n`` replica
threads, and DDP with ``n`` rank processes on ``1/n`` of the batch each. Every
process uses one intra-op thread, so ``n`` replicas get ``n`` threads either way.
Each measurement runs ``warmup`` steps untimed, then ``repeats`` timed steps; the
median is reported (DDP: the median over steps of the slowest rank's step).

**Bytes moved per step, counted.** What would cross between devices, counted on the
tensors themselves:

* DataParallel, every step: the parameters copied to replicas ``1 .. n-1``
  (``replicate``), the input pieces ``1 .. n-1`` (``scatter``, piece 0 is already on
  the first device), the outputs of replicas ``1 .. n-1`` (``gather``), then in
  backward the output gradients sent back to them and their parameter gradients
  summed into the first device's parameters. Every byte goes to or from device 0.
* DDP, every step: the gradient buckets each rank hands to allreduce, counted by a
  communication hook (``register_comm_hook``) that then runs the default allreduce.
  Nothing else: each process loads its own inputs and keeps its own outputs. A ring
  allreduce of ``B`` bytes sends ``2 (n - 1) / n · B`` bytes from every rank (§4).
"""
from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from . import data_parallel as mkdp
from .launch import run_ranks


def make_model(width: int = 256, depth: int = 4, seed: int = 0) -> nn.Sequential:
    """``depth`` Linear(width, width) layers with ReLUs between them."""
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    for i in range(depth):
        layers += [nn.Linear(width, width)] + ([nn.ReLU()] if i < depth - 1 else [])
    return nn.Sequential(*layers)


def make_batch(rows: int = 256, width: int = 256, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets of ``rows`` rows, the same in every process."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, width, generator=g), torch.randn(rows, width, generator=g)


def step_times(model: nn.Module, step_model: nn.Module, x: torch.Tensor, y: torch.Tensor,
               warmup: int, repeats: int) -> list[float]:
    """Seconds of each of ``repeats`` SGD steps of ``step_model`` (which trains ``model``'s parameters)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    times = []
    for i in range(warmup + repeats):
        start = time.perf_counter()
        optimizer.zero_grad()
        nn.functional.mse_loss(step_model(x), y).backward()
        optimizer.step()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return times


def time_one_process(devices: int | None, width: int = 256, depth: int = 4, rows: int = 256, warmup: int = 3,
                     repeats: int = 15) -> float:
    """Median step time in this process with one thread: the plain model (``devices=None``) or
    ``data_parallel.DataParallel`` with ``devices`` replica threads."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = make_model(width, depth)
        wrapped = model if devices is None else mkdp.DataParallel(model, devices=devices)
        return statistics.median(step_times(model, wrapped, *make_batch(rows, width), warmup, repeats))
    finally:
        torch.set_num_threads(threads)


def time_ddp_rank(width: int = 256, depth: int = 4, rows: int = 256, warmup: int = 3, repeats: int = 15) -> float:
    """In a rank: DDP on this rank's ``rows / world`` rows; the median over steps of the slowest rank's time."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model(width, depth)
    ddp = DDP(model)
    x, y = make_batch(rows, width)
    mine = slice(rank * rows // world, (rank + 1) * rows // world)
    times = torch.tensor(step_times(model, ddp, x[mine], y[mine], warmup, repeats), dtype=torch.float64)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    return statistics.median(times.tolist())


def compare_step_times(devices: int = 2, width: int = 512, depth: int = 4, rows: int = 512, warmup: int = 3,
                       repeats: int = 10, timeout: float = 60.0) -> dict[str, float]:
    """Median milliseconds per step: one process, DataParallel with ``devices`` threads, DDP with
    ``devices`` processes. Each runs in processes of its own (forked, one thread each), so
    the caller's threads and state do not disturb the timings."""
    args = (width, depth, rows, warmup, repeats)
    one = run_ranks(time_one_process, 1, None, *args, timeout=timeout)[0]
    dp = run_ranks(time_one_process, 1, devices, *args, timeout=timeout)[0]
    ddp = run_ranks(time_ddp_rank, devices, *args, timeout=timeout)[0]
    return {"one process, whole batch": 1e3 * one, f"DataParallel, {devices} threads": 1e3 * dp,
            f"DDP, {devices} processes": 1e3 * ddp}


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def dp_bytes_per_step(devices: int = 2, width: int = 256, depth: int = 4, rows: int = 256) -> dict[str, int]:
    """Bytes DataParallel moves between devices in one training step, by category, counted on the tensors."""
    model = make_model(width, depth)
    x, y = make_batch(rows, width)
    counts = dict.fromkeys(("replicate (parameters)", "scatter (inputs)", "gather (outputs)",
                            "backward: output gradients", "backward: parameter gradients"), 0)

    def count(key: str):
        def hook(grad: torch.Tensor) -> None:
            counts[key] += _nbytes(grad)
        return hook

    pieces = mkdp.scatter(x, devices)
    replicas = mkdp.replicate(model, len(pieces))
    # a replica's parameters are plain tensor attributes with a grad_fn (copies of the original's)
    others = [t for r in replicas[1:] for m in r.modules() for t in vars(m).values()
              if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    counts["replicate (parameters)"] = sum(_nbytes(t) for t in others)
    for t in others:
        t.register_hook(count("backward: parameter gradients"))
    counts["scatter (inputs)"] = sum(_nbytes(p) for p in pieces[1:])
    outputs = mkdp.parallel_apply(replicas, pieces)
    counts["gather (outputs)"] = sum(_nbytes(o) for o in outputs[1:])
    for o in outputs[1:]:
        o.register_hook(count("backward: output gradients"))
    nn.functional.mse_loss(mkdp.gather(outputs), y).backward()
    return counts


def ddp_bytes_rank(width: int = 256, depth: int = 4, rows: int = 256) -> dict[str, int]:
    """In a rank: bytes this rank hands to allreduce in one DDP step (a comm hook counts each bucket)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model(width, depth)
    ddp = DDP(model)
    seen = {"buckets": 0, "allreduce (gradients)": 0}

    def counting_hook(state, bucket):
        seen["buckets"] += 1
        seen["allreduce (gradients)"] += _nbytes(bucket.buffer())
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, counting_hook)
    x, y = make_batch(rows, width)
    mine = slice(rank * rows // world, (rank + 1) * rows // world)
    nn.functional.mse_loss(ddp(x[mine]), y[mine]).backward()
    return seen


def parameter_bytes(width: int = 256, depth: int = 4) -> int:
    """Bytes of the model's parameters."""
    return sum(_nbytes(p) for p in make_model(width, depth).parameters())
