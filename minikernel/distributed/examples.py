"""The rank functions chapter 07's notebook runs with ``run_ranks``.

Each runs inside one rank process (the process group is already up, so
``dist.get_rank()`` says which) and returns plain values for the notebook to print.
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp
from torch.nn.parallel import DistributedDataParallel as DDP

from .ddp import ToyModel
from .ddp_compare import TwoBranches
from .launch import imports_first
from .mini_ddp import DistributedDataParallel
from .naive import naive_allreduce
from .ops import combine_
from .pieces import PIECE_BYTES, pieces
from .ring import ring_allreduce
from .transport import Ring


def notes_row(length: int = 4) -> torch.Tensor:
    """This rank's row of the notes' example: ``[1..4] + 4 * rank``."""
    return torch.arange(1, length + 1) + length * dist.get_rank()


def who_am_i() -> dict:
    """What a rank knows about itself, and the c10d classes under ``torch.distributed``."""
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    return {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "backend": dist.get_backend(),
            "threads": torch.get_num_threads(), "c10d": f"{type(backend).__module__}.{type(backend).__name__}"}


def reduce_and_allreduce() -> tuple[list, list]:
    """``dist.reduce`` to rank 0 and ``dist.all_reduce`` of the notes' rows: what each rank holds after."""
    x = notes_row()
    reduced, allreduced = x.clone(), x.clone()
    dist.reduce(reduced, dst=0)
    dist.all_reduce(allreduced)
    return reduced.tolist(), allreduced.tolist()


def reduce_scatter_and_all_gather() -> tuple[list, list]:
    """PyTorch's own two halves: ``reduce_scatter_single`` (rank r gets chunk r of the sum) and
    ``all_gather_single`` (every rank gets every rank's piece)."""
    x = notes_row()
    mine = torch.empty(1, dtype=x.dtype)
    dist.reduce_scatter_single(mine, x)
    everything = torch.empty(dist.get_world_size(), dtype=x.dtype)
    dist.all_gather_single(everything, mine)
    return mine.tolist(), everything.tolist()


def all_reduce_ops() -> dict:
    """``dist.all_reduce`` of the notes' rows with SUM, AVG (floats) and MAX."""
    out = {}
    for op, dtype in ((ReduceOp.SUM, torch.int64), (ReduceOp.AVG, torch.float32), (ReduceOp.MAX, torch.int64)):
        t = notes_row().to(dtype)
        dist.all_reduce(t, op)
        out[op.name] = t.tolist()
    return out


def ring_ops() -> dict:
    """The same with your ``ring_allreduce``."""
    out = {}
    for op, dtype in ((ReduceOp.SUM, torch.int64), (ReduceOp.AVG, torch.float32), (ReduceOp.MAX, torch.int64)):
        t = notes_row().to(dtype)
        ring_allreduce(t, op)
        out[op.name] = t.tolist()
    return out


def gloo_pitfalls() -> dict:
    """Three things gloo does that a collective must guard against (see the chapter)."""
    out = {}
    base = torch.arange(8.0)
    view = base[::2]  # strided: every other element
    dist.all_reduce(view)
    out["strided view after all_reduce"] = view.tolist()
    out["its base after"] = base.tolist()
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int16))
        out["int16"] = "ok"
    except RuntimeError as err:
        out["int16"] = str(err)
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int64), ReduceOp.AVG)
        out["int64 AVG"] = "ok"
    except RuntimeError as err:
        out["int64 AVG"] = str(err)
    return out


def sync_batchnorm_module() -> str:
    """``torch.nn.SyncBatchNorm`` in a rank of a CPU process group: what happens."""
    try:
        torch.nn.SyncBatchNorm(3)(torch.randn(4, 3))
        return "ran"
    except ValueError as err:
        return f"ValueError: {err}"


def ring_on_strided() -> tuple[list, list]:
    """``ring_allreduce`` on the same strided view: the view reduced, the rest of the base untouched."""
    base = torch.arange(8.0)
    view = base[::2]
    ring_allreduce(view)
    return view.tolist(), base.tolist()


def blocking_send_first() -> str:
    """Every rank calls the blocking ``dist.send`` to its neighbour first: nobody is receiving.

    Returns "timed out" (this rank's wait hit the timeout), "peer gone" (its neighbour
    timed out first and closed the connection) or "no deadlock".
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.ones(4)
    try:
        dist.send(t, (rank + 1) % world)
        dist.recv(t, (rank - 1) % world)
        return "no deadlock"
    except RuntimeError as err:
        return "timed out" if "imed out" in str(err) else "peer gone"


def compare_with_all_reduce(cases: list[tuple[int, str, str]]) -> list[bool]:
    """For each (length, dtype name, op name): does ``ring_allreduce`` equal ``dist.all_reduce``?"""
    results = []
    for k, (length, dtype_name, op_name) in enumerate(cases):
        dtype, op = getattr(torch, dtype_name), getattr(ReduceOp, op_name)
        g = torch.Generator().manual_seed(100 * k + dist.get_rank())
        x = (torch.randn(length, generator=g) * 100).to(dtype)
        expected, got = x.clone(), x.clone()
        dist.all_reduce(expected, op)
        ring_allreduce(got, op)
        results.append(torch.equal(got, expected) if not dtype.is_floating_point
                       else torch.allclose(got, expected, rtol=1e-5, atol=1e-4))
    return results


def ring_traffic(length: int) -> tuple[int, int]:
    """(elements sent, elements received) by this rank in one ring allreduce of ``length`` elements."""
    from .ring import ring_allreduce_chunks
    ring = Ring.of(None, "ring_allreduce")
    x = torch.ones(length)
    ring_allreduce_chunks(list(x.tensor_split(ring.world_size)), ReduceOp.SUM, ring)
    return ring.sent, ring.received


def mismatched_lengths() -> str:
    """Rank r passes r + 3 elements: every rank must refuse, before sending anything."""
    try:
        ring_allreduce(torch.ones(3 + dist.get_rank()))
        return "no error"
    except RuntimeError as err:
        return f"{type(err).__name__}: {err}"


def one_rank_dies(method: str = "ring") -> str:
    """Rank 1 exits at once; the others call an allreduce and report what they raised."""
    if dist.get_rank() == 1:
        import os
        os._exit(1)
    start = time.perf_counter()
    try:
        {"ring": ring_allreduce, "naive": naive_allreduce}[method](torch.ones(4))
        return "no error"
    except RuntimeError as err:
        within = time.perf_counter() - start < Ring.of(None).timeout.total_seconds()
        return f"{type(err).__name__} (within the timeout: {within}): {str(err).split(' gloo:')[0]}"


def ping_pong(sizes: list[int], repeat: int = 9) -> list[float]:
    """Between ranks 0 and 1: median one-way time (half a round trip) of a float32 message per size."""
    import statistics
    rank = dist.get_rank()
    ring = Ring.of(None, "ping_pong")
    out = []
    for size in sizes:
        buf = torch.zeros(size)
        times = []
        for i in range(repeat + 2):
            dist.barrier()
            start = time.perf_counter()
            if rank == 0:
                ring.start_send(buf, 1).wait()
                ring.start_recv(buf, 1).wait()
            elif rank == 1:
                ring.start_recv(buf, 0).wait()
                ring.start_send(buf, 0).wait()
            if i >= 2:  # two warm-up rounds
                times.append((time.perf_counter() - start) / 2)
        out.append(statistics.median(times))
    return out


def exchange_times(sizes: list[int], repeat: int = 9) -> list[float]:
    """Every rank at once: median time of ``ring.exchange`` (send to the next rank, receive from the
    previous one) of a float32 message per size, the slowest rank's: one step of a ring."""
    import statistics
    ring = Ring.of(None, "exchange_times")
    out = []
    for size in sizes:
        send, recv = torch.zeros(size), torch.zeros(size)
        times = []
        for i in range(repeat + 2):
            dist.barrier()
            start = time.perf_counter()
            ring.exchange(send, recv)
            slowest = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
            dist.all_reduce(slowest, op=ReduceOp.MAX)
            if i >= 2:  # two warm-up rounds
                times.append(slowest.item())
        out.append(statistics.median(times))
    return out


def addition_seconds_per_byte(piece_bytes: int = PIECE_BYTES, total_bytes: int = 64 << 20, repeat: int = 5) -> float:
    """``gamma``: median seconds per byte of ``combine_`` (SUM, float32) over pieces of ``piece_bytes``.

    Walks a ``total_bytes`` buffer piece by piece, as a rank's scatter-reduce does, so
    the data comes from memory rather than a warm cache; one thread, like every rank.
    """
    import statistics
    n = total_bytes // 4
    mine, incoming = torch.ones(n), torch.ones(n)
    per_byte = []
    for _ in range(repeat):
        for a, b in zip(pieces(mine, piece_bytes), pieces(incoming, piece_bytes)):
            start = time.perf_counter()
            combine_(a, b, ReduceOp.SUM)
            per_byte.append((time.perf_counter() - start) / (a.numel() * 4))
    return statistics.median(per_byte)


def broadcast_and_backends() -> dict:
    """``dist.broadcast`` of rank 0's tensor (what DDP does with the parameters at wrap time),
    and which c10d backends this build of PyTorch has."""
    t = torch.full((3,), float(dist.get_rank()))
    dist.broadcast(t, src=0)
    return {"after broadcast(src=0)": t.tolist(), "gloo": dist.is_gloo_available(),
            "nccl": dist.is_nccl_available(), "mpi": dist.is_mpi_available()}


@imports_first("torch._dynamo")  # what DDP imports as it wraps: once, before the ranks fork
def ddp_autocast_step() -> dict:
    """One DDP step with ``torch.autocast`` (bfloat16 on CPU) and ``GradScaler("cpu")``: what
    Apex's amp + DDP did, with PyTorch alone. Returns dtypes and whether the ranks agree."""
    torch.manual_seed(dist.get_rank())
    model = DDP(ToyModel())
    scaler = torch.amp.GradScaler("cpu")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 10)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
        loss = out.float().pow(2).mean()
    scaler.scale(loss).backward()
    grad = model.module.net1.weight.grad
    grads = [torch.empty_like(grad) for _ in range(dist.get_world_size())]
    dist.all_gather(grads, grad)
    scaler.step(optimizer)
    scaler.update()
    return {"output dtype": str(out.dtype), "weight dtype": str(model.module.net1.weight.dtype),
            "grad dtype": str(grad.dtype), "grads equal on every rank": all(torch.equal(g, grads[0]) for g in grads)}


@imports_first("torch._dynamo")  # what DDP imports as it wraps: once, before the ranks fork
def ddp_straggler(delay: float) -> str:
    """Rank 1 sleeps ``delay`` seconds before its backward; what do the backward passes do?

    Returns "finished", "timed out" (this rank's allreduce hit the group's timeout) or
    "peer gone" (the other rank gave up first and closed the connection).
    """
    model = DDP(ToyModel())
    loss = model(torch.randn(4, 10)).sum()
    if dist.get_rank() == 1:
        time.sleep(delay)
    try:
        loss.backward()
        return "finished"
    except RuntimeError as err:
        return "timed out" if "imed out" in str(err) else "peer gone"


def mini_ddp_events() -> list[str]:
    """The small DDP (on ``ring_allreduce``) over ``TwoBranches``: what its reducer saw in the
    second backward pass, once the buckets have been rebuilt."""
    torch.manual_seed(0)
    model = TwoBranches()
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.0002)
    for _ in range(2):
        ddp(torch.randn(4, 8)).pow(2).mean().backward()
    return ddp.reducer.events
