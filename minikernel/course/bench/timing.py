"""Timing minikernel against PyTorch: the rows, the median, the table.

Honest timing, in one process, on the same inputs:

1. **warm up** — the first calls pay for imports, caches and (later) JIT compiles;
2. **synchronize** — GPU work is asynchronous, so a timer must wait for it to
   finish (rows pass a ``sync`` function; CPU rows need none);
3. **repeat and take the median** — one run is noise; the median ignores outliers.

Each row times one operation through minikernel (your code, or the references
with ``MINIKERNEL_SOLUTIONS=all``) and through PyTorch, and prints the ratio
``minikernel / torch`` (lower is better; 1.0 means as fast as PyTorch).

A ratio alone hides how far from the machine's limits both sides are, so a row that
declares its work (bytes it must read and write, or floating-point operations) also
prints each side's rate: GB/s for memory-bound operations, GFLOP/s for matmul. The
header names the machine's own yardsticks measured in the same run: a plain copy's
bandwidth (``copy_`` of 64 MiB into a buffer already in use) and torch.mm's GFLOP/s at 1024x1024, and the
thread count. Each time is a median; the spread beside it is the 25th-75th
percentile range of the samples, as a percentage of the median.

Before either side of a row is timed, both are warmed up (their inputs read, their
outputs written: with ``machine.keep_freed_memory`` the timed calls reuse those
pages). The two sides' samples then take turns (``paired_samples_ms``): a shared
machine's memory bandwidth drifts by tens of percent within seconds, and timing all
of torch's samples before all of ours would put that drift into the ratio. A row
whose spread on either side exceeds ``SPREAD_LIMIT_PCT`` is timed again, both sides,
up to ``MAX_ROUNDS`` rounds; the table gives the last round and says how many there
were, and flags the row with ``!`` if it never got below the limit. The JSON keeps every earlier round's figures too.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch

from ..exercise import stub_exercise_id

Thunk = Callable[[], object]

#: A side whose interquartile range exceeds this share of its median is timed again.
SPREAD_LIMIT_PCT = 10.0
#: Rounds of timing at most for one row (the first and up to three re-samplings).
MAX_ROUNDS = 4


@dataclass
class Row:
    """One benchmark: ``setup()`` builds the inputs and returns (minikernel_call, torch_call).

    ``bytes``: what one call must read and write at least (for GB/s); ``flops``: its
    floating-point operations (for GFLOP/s). Give one, or neither."""

    name: str
    setup: Callable[[], tuple[Thunk, Thunk]]
    sync: Callable[[], None] | None = None
    bytes: int | None = None
    flops: int | None = None
    skip: Callable[[], str | None] | None = None  #: why the row cannot run here (None: it can)
    min_batch: int = 1  #: calls per timed batch at least (see ``samples_ms``)


@dataclass
class Result:
    name: str
    minikernel_ms: float | None
    torch_ms: float | None
    ratio: float | None
    note: str = ""
    unit: str = ""  #: "GB/s", "GFLOP/s" or "" (the row declared no work)
    minikernel_rate: float | None = None
    torch_rate: float | None = None
    minikernel_spread_pct: float | None = None  #: interquartile range / median
    torch_spread_pct: float | None = None
    rounds: int = 1  #: how many times the row was timed (see ``SPREAD_LIMIT_PCT``)
    flagged: bool = False  #: a spread still above ``SPREAD_LIMIT_PCT`` after the last round
    #: (minikernel_ms, minikernel_spread_pct, torch_ms, torch_spread_pct) of the rounds before the last
    earlier_rounds: list = field(default_factory=list)


ROWS: list[Row] = []


def row(name: str, sync: Callable[[], None] | None = None, *, bytes: int | None = None, flops: int | None = None,
        skip: Callable[[], str | None] | None = None, min_batch: int = 1):
    """Register a benchmark row: decorate a setup function returning (minikernel_call, torch_call).

    ``skip``, when given, is asked before the row runs: a reason (a string) lists the
    row as skipped with that reason instead of timing it (the GPU rows without a GPU).
    ``min_batch``: calls per timed batch at least; a GPU row that times kernels alone
    sets it, so each launch's host work overlaps the kernels queued before it.

    Example::

        @row("ch02 map relu, contiguous 4096x4096 float32", bytes=2 * 4096 * 4096 * 4)
        def _map():
            t = torch.randn(4096, 4096)
            m = Tensor.from_torch(t)
            return (lambda: m.relu()), (lambda: t.relu())
    """
    def register(setup):
        ROWS.append(Row(name, setup, sync, bytes, flops, skip, min_batch))
        return setup
    return register


def median_ms(fn: Thunk, warmup: int = 3, repeat: int = 15, sync: Callable[[], None] | None = None,
              min_batch: int = 1) -> float:
    """Median wall time of one ``fn()`` in milliseconds, after ``warmup`` untimed calls."""
    return statistics.median(samples_ms(fn, warmup, repeat, sync, min_batch))


def spread_pct(samples: list[float]) -> float:
    """The samples' interquartile range as a percentage of their median."""
    if len(samples) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return 100.0 * (q3 - q1) / statistics.median(samples)


def _timed_ns(fn: Thunk, number: int, sync: Callable[[], None] | None) -> float:
    """Wall time of ``number`` calls of ``fn`` in nanoseconds, divided by ``number``."""
    start = time.perf_counter_ns()
    for _ in range(number):
        fn()
    if sync:
        sync()  # without this a GPU timer would measure only the launches
    return (time.perf_counter_ns() - start) / number


def _batch(fn: Thunk, sync: Callable[[], None] | None, min_batch: int) -> int:
    """Calls per sample: about 1 ms of them (one probe call decides), ``min_batch`` at least."""
    return max(min_batch, min(10_000, int(1e6 / max(_timed_ns(fn, 1, sync), 1.0))))


def samples_ms(fn: Thunk, warmup: int = 3, repeat: int = 15, sync: Callable[[], None] | None = None,
               min_batch: int = 1) -> list[float]:
    """``repeat`` wall times of one ``fn()`` in milliseconds, after ``warmup`` untimed calls.

    Calls shorter than a millisecond are timed in batches (the batch time divided
    by its size), so the timer's own resolution and overhead do not dominate; a batch
    has ``min_batch`` calls at least.
    """
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    number = _batch(fn, sync, min_batch)
    return [_timed_ns(fn, number, sync) / 1e6 for _ in range(repeat)]


def paired_samples_ms(first: Thunk, second: Thunk, repeat: int = 15, sync: Callable[[], None] | None = None,
                      min_batch: int = 1) -> tuple[list[float], list[float]]:
    """``repeat`` samples of each of two warmed-up calls, taken in turns: (first's, second's), in ms.

    Sample ``i`` of each side is taken back to back with the other's, in the order
    first-second for even ``i`` and second-first for odd ``i``, so a machine that slows
    down (or speeds up) during the row changes both sides alike and a steady drift
    cancels out of the ratio. Batches as in ``samples_ms``.
    """
    n_first, n_second = _batch(first, sync, min_batch), _batch(second, sync, min_batch)
    a: list[float] = []
    b: list[float] = []
    for i in range(repeat):
        if i % 2 == 0:
            a.append(_timed_ns(first, n_first, sync) / 1e6)
            b.append(_timed_ns(second, n_second, sync) / 1e6)
        else:
            b.append(_timed_ns(second, n_second, sync) / 1e6)
            a.append(_timed_ns(first, n_first, sync) / 1e6)
    return a, b


def _rate(r: Row, ms: float | None) -> float | None:
    """GB/s or GFLOP/s of one call taking ``ms`` (None without declared work)."""
    work = r.bytes if r.bytes is not None else r.flops
    return None if work is None or not ms else work / (ms * 1e-3) / 1e9


def _too_wide(*spreads: float | None) -> bool:
    return any(sp is not None and sp > SPREAD_LIMIT_PCT for sp in spreads)


def run_row(r: Row, warmup: int, repeat: int, max_rounds: int = MAX_ROUNDS) -> Result:
    """Time one row: warm both sides, then rounds of ``repeat`` samples each until both spreads are small."""
    if r.skip is not None and (reason := r.skip()):
        return Result(r.name, None, None, None, f"skipped: {reason}")
    mine, theirs = r.setup()
    unit = "GB/s" if r.bytes is not None else "GFLOP/s" if r.flops is not None else ""
    todo = None
    for _ in range(max(warmup, 1)):  # both sides' inputs read and outputs written before any timing
        theirs()
        if todo is None:
            try:
                mine()
            except NotImplementedError as err:
                todo = stub_exercise_id(err)
    if r.sync:
        r.sync()
    earlier: list[tuple] = []
    for round_ in range(1, max(max_rounds, 1) + 1):
        if todo is None:
            torch_samples, mine_samples = paired_samples_ms(theirs, mine, repeat, r.sync, r.min_batch)
        else:
            torch_samples, mine_samples = samples_ms(theirs, 0, repeat, r.sync, r.min_batch), None
        torch_ms, torch_spread = statistics.median(torch_samples), spread_pct(torch_samples)
        mine_ms = None if mine_samples is None else statistics.median(mine_samples)
        mine_spread = None if mine_samples is None else spread_pct(mine_samples)
        if not _too_wide(torch_spread, mine_spread) or round_ == max_rounds:
            break
        earlier.append((mine_ms, mine_spread, torch_ms, torch_spread))
    base = dict(unit=unit, torch_rate=_rate(r, torch_ms), torch_spread_pct=torch_spread, rounds=round_,
                flagged=_too_wide(torch_spread, mine_spread), earlier_rounds=earlier)
    if todo is not None:
        return Result(r.name, None, torch_ms, None,
                      f"exercise {todo} not implemented (MINIKERNEL_SOLUTIONS={todo} times the reference)", **base)
    return Result(r.name, mine_ms, torch_ms, mine_ms / torch_ms if torch_ms else None,
                  minikernel_rate=_rate(r, mine_ms), minikernel_spread_pct=mine_spread, **base)


def _time(ms: float | None, spread: float | None) -> str:
    if ms is None:
        return f"{'-':>17}"
    mark = "!" if spread is not None and spread > SPREAD_LIMIT_PCT else " "
    return f"{ms:9.3f} ±{spread or 0:3.0f}%{mark}"


def _rate_text(rate: float | None, unit: str) -> str:
    return f"{rate:7.1f} {unit}" if rate is not None else ""


def format_table(results: list[Result]) -> str:
    if not results:
        return "(no rows)"
    width = max(len(r.name) for r in results)
    lines = [f"{'benchmark':<{width}}  {'minikernel ms':>17}  {'torch ms':>17}  {'ratio':>7}  "
             f"{'minikernel':>15}  {'torch':>15}"]
    for r in results:
        ratio = f"{r.ratio:6.2f}x" if r.ratio is not None else f"{'-':>7}"
        rates = f"{_rate_text(r.minikernel_rate, r.unit):>15}  {_rate_text(r.torch_rate, r.unit):>15}"
        rounds = f"timed {r.rounds} times" if r.rounds > 1 else ""
        note = "; ".join(x for x in (rounds, r.note) if x)
        lines.append(f"{r.name:<{width}}  {_time(r.minikernel_ms, r.minikernel_spread_pct)}  "
                     f"{_time(r.torch_ms, r.torch_spread_pct)}  {ratio}  {rates}  {note}".rstrip())
    lines.append("ms: median of the samples, ±: their interquartile range; rates: work / median time")
    if any(r.flagged for r in results):
        lines.append(f"!: spread still above {SPREAD_LIMIT_PCT:.0f}% after the last round: not a figure to rely on")
    return "\n".join(lines)


def machine_yardsticks(repeat: int = 7) -> dict:
    """What this machine does at its best, measured now: copy bandwidth and torch.mm's rate."""
    big, dst = torch.ones(16 * 1024 * 1024), torch.zeros(16 * 1024 * 1024)  # 64 MiB of float32 each
    copy_ms = median_ms(lambda: dst.copy_(big), 1, repeat)  # into memory already mapped: no page faults
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    mm_ms = median_ms(lambda: torch.mm(a, b), 1, repeat)
    return {"threads": torch.get_num_threads(), "copy_gb_per_s": 2 * big.numel() * 4 / (copy_ms * 1e-3) / 1e9,
            "torch_mm_1024_gflop_per_s": 2 * 1024 ** 3 / (mm_ms * 1e-3) / 1e9}


def report(header: str, rows: list, table: Callable[[list], str], as_json: bool = False,
           machine: dict | None = None) -> None:
    """Print a benchmark's set-up line and rows: as ``table(rows)`` text, or as JSON."""
    if as_json:
        print(json.dumps({"setup": header, "machine": machine or {}, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print(header)
        print(table(rows))
