"""``python -m minikernel bench --allreduce``: ring vs naive vs ``dist.all_reduce``.

For world sizes 2 and 4 and float32 buffers of 1K, 1M and 16M elements, each
method runs in real rank processes (gloo, one thread per rank). Timing, as in
``minikernel.bench``: warm-up calls first, then repeated runs; each run starts
after a barrier and its time is the *slowest rank's* (an allreduce is done when
the last rank is); the table shows the median. The methods take turns, so load
from elsewhere on the machine hits them alike; sizes up to 1M are repeated four
times as often, since short runs are noisier.

Two bandwidths, as NCCL's tests define them, for S bytes per rank in t seconds:

* ``algbw = S / t`` — how fast the buffer got reduced;
* ``busbw = algbw · 2 (N - 1) / N`` — the traffic each rank's link actually
  carried in a ring; comparable across world sizes and with the link's speed.
"""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.distributed as dist

from ...distributed.launch import run_ranks
from ...distributed.naive import naive_allreduce
from ...distributed.ring import ring_allreduce
from ..exercise import stub_exercise_id
from .timing import report

SIZES = {"1K": 1 << 10, "1M": 1 << 20, "16M": 1 << 24}
SMALL, SMALL_REPEAT_FACTOR = 1 << 20, 4  #: sizes up to SMALL are repeated 4 times as often
WORLDS = (2, 4)
METHODS: dict[str, Callable] = {"ring": ring_allreduce, "naive": naive_allreduce, "dist.all_reduce": dist.all_reduce}


@dataclass
class AllreduceResult:
    world_size: int
    size: str
    elements: int
    method: str
    ms: float | None        #: median time of the slowest rank, milliseconds
    algbw_gbs: float | None
    busbw_gbs: float | None
    note: str = ""


def _timed(fn: Callable, work: torch.Tensor, source: torch.Tensor) -> float:
    """One run: reset the buffer, line every rank up, time fn, return the slowest rank's seconds."""
    work.copy_(source)
    dist.barrier()
    start = time.perf_counter()
    fn(work)
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return elapsed.item()


def time_methods(sizes: dict[str, int], warmup: int, repeat: int, methods: tuple[str, ...] = tuple(METHODS)) -> list:
    """In a rank: median seconds per (size, method); an unfinished exercise gives its message instead.

    The methods take turns (ring, naive, all_reduce, ring, ...) rather than running
    their repeats back to back, so a burst of load from elsewhere on the machine
    hits them all alike.
    """
    rank = dist.get_rank()
    out = []
    for label, numel in sizes.items():
        source = torch.randn(numel, generator=torch.Generator().manual_seed(rank))
        work = torch.empty_like(source)
        times: dict[str, list[float]] = {name: [] for name in methods}
        notes: dict[str, str] = {}
        rounds = repeat * SMALL_REPEAT_FACTOR if numel <= SMALL else repeat  # short runs are noisier
        for round_ in range(warmup + rounds):
            for name in methods:
                if name in notes:
                    continue
                try:
                    seconds = _timed(METHODS[name], work, source)
                except NotImplementedError as err:
                    if not stub_exercise_id(err):
                        raise
                    notes[name] = f"{err}; MINIKERNEL_SOLUTIONS=7.3 times the reference"
                    continue
                if round_ >= warmup:
                    times[name].append(seconds)
        for name in methods:
            median = statistics.median(times[name]) if name not in notes else None
            out.append((label, numel, name, median, notes.get(name, "")))
    return out


def measure(worlds: tuple[int, ...] = WORLDS, sizes: dict[str, int] | None = None, warmup: int = 2,
            repeat: int = 15, methods: tuple[str, ...] = tuple(METHODS)) -> list[AllreduceResult]:
    """Run ``time_methods`` in ``world`` rank processes for each world size; one row per case."""
    sizes = SIZES if sizes is None else sizes
    rows = []
    for world in worlds:
        # generous: a 16M allreduce on an oversubscribed machine can take a second
        timings = run_ranks(time_methods, world, sizes, warmup, repeat, methods, timeout=120, deadline=1200)[0]
        for label, numel, name, seconds, note in timings:
            if seconds is None:
                rows.append(AllreduceResult(world, label, numel, name, None, None, None, note))
                continue
            algbw = numel * 4 / seconds / 1e9
            rows.append(AllreduceResult(world, label, numel, name, seconds * 1e3, algbw,
                                        algbw * 2 * (world - 1) / world))
    return rows


def format_table(rows: list[AllreduceResult]) -> str:
    lines = [f"{'world':>5}  {'size':>4}  {'method':<15}  {'ms':>9}  {'algbw GB/s':>10}  {'busbw GB/s':>10}"]
    for r in rows:
        if r.ms is None:
            lines.append(f"{r.world_size:>5}  {r.size:>4}  {r.method:<15}  {'-':>9}  {'-':>10}  {'-':>10}  {r.note}")
        else:
            lines.append(f"{r.world_size:>5}  {r.size:>4}  {r.method:<15}  {r.ms:9.3f}  {r.algbw_gbs:10.3f}  "
                         f"{r.busbw_gbs:10.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None, json_out: bool = False, quick: bool = False,
         worlds: list[int] | None = None, sizes: list[str] | None = None) -> int:
    """Print the table (or JSON). ``quick``: 1 warm-up, 3 repeats (a smoke test, not a measurement);
    ``worlds``/``sizes`` (labels of ``SIZES``) restrict the table, default all."""
    parser = argparse.ArgumentParser(prog="python -m minikernel bench --allreduce", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", default=json_out)
    parser.add_argument("--quick", action="store_true", default=quick)
    args = parser.parse_args(argv or [])
    warmup, repeat = (1, 3) if args.quick else (2, 15)
    if worlds and min(worlds) < 1:
        raise SystemExit("--world must be at least 1")
    rows = measure(worlds=tuple(worlds or WORLDS), sizes={s: SIZES[s] for s in (sizes or SIZES)},
                   warmup=warmup, repeat=repeat)
    header = (f"allreduce of float32, torch {torch.__version__}, gloo, 1 thread per rank, "
              f"{torch.multiprocessing.cpu_count()} CPU cores, warm-up {warmup}, median of {repeat} "
              f"(x{SMALL_REPEAT_FACTOR} up to 1M; time of the slowest rank per run)")
    report(header, rows, format_table, as_json=args.json)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
