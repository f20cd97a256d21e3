"""Timing minikernel against PyTorch: the rows, the median, the table.

Honest timing, in one process, on the same inputs:

1. **warm up** — the first calls pay for imports, caches and (later) JIT compiles;
2. **synchronize** — GPU work is asynchronous, so a timer must wait for it to
   finish (rows pass a ``sync`` function; CPU rows need none);
3. **repeat and take the median** — one run is noise; the median ignores outliers.

Each row times one operation through minikernel (your code, or the references
with ``MINIKERNEL_SOLUTIONS=all``) and through PyTorch, and prints the ratio
``minikernel / torch`` (lower is better; 1.0 means as fast as PyTorch).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable

from ..exercise import stub_exercise_id

Thunk = Callable[[], object]


@dataclass
class Row:
    """One benchmark: ``setup()`` builds the inputs and returns (minikernel_call, torch_call)."""

    name: str
    setup: Callable[[], tuple[Thunk, Thunk]]
    sync: Callable[[], None] | None = None


@dataclass
class Result:
    name: str
    minikernel_ms: float | None
    torch_ms: float | None
    ratio: float | None
    note: str = ""


ROWS: list[Row] = []


def row(name: str, sync: Callable[[], None] | None = None):
    """Register a benchmark row: decorate a setup function returning (minikernel_call, torch_call)."""
    def register(setup):
        ROWS.append(Row(name, setup, sync))
        return setup
    return register


def median_ms(fn: Thunk, warmup: int = 3, repeat: int = 15, sync: Callable[[], None] | None = None) -> float:
    """Median wall time of one ``fn()`` in milliseconds, after ``warmup`` untimed calls.

    Calls shorter than a millisecond are timed in batches (the batch time divided
    by its size), so the timer's own resolution and overhead do not dominate.
    """
    def timed(number: int) -> float:
        start = time.perf_counter_ns()
        for _ in range(number):
            fn()
        if sync:
            sync()  # without this a GPU timer would measure only the launches
        return (time.perf_counter_ns() - start) / number

    for _ in range(warmup):
        fn()
    if sync:
        sync()
    number = max(1, min(10_000, int(1e6 / max(timed(1), 1.0))))  # about 1 ms per sample
    return statistics.median(timed(number) for _ in range(repeat)) / 1e6


def run_row(r: Row, warmup: int, repeat: int) -> Result:
    mine, theirs = r.setup()
    torch_ms = median_ms(theirs, warmup, repeat, r.sync)
    try:
        mine_ms = median_ms(mine, warmup, repeat, r.sync)
    except NotImplementedError as err:
        todo = stub_exercise_id(err)
        return Result(r.name, None, torch_ms, None,
                      f"exercise {todo} not implemented (MINIKERNEL_SOLUTIONS={todo} times the reference)")
    return Result(r.name, mine_ms, torch_ms, mine_ms / torch_ms if torch_ms else None)


def format_table(results: list[Result]) -> str:
    width = max(len(r.name) for r in results)
    lines = [f"{'benchmark':<{width}}  {'minikernel ms':>13}  {'torch ms':>9}  {'ratio':>8}"]
    for r in results:
        mine = f"{r.minikernel_ms:13.4f}" if r.minikernel_ms is not None else f"{'-':>13}"
        ratio = f"{r.ratio:7.1f}x" if r.ratio is not None else f"{'-':>8}"
        lines.append(f"{r.name:<{width}}  {mine}  {r.torch_ms:9.4f}  {ratio}  {r.note}".rstrip())
    return "\n".join(lines)


def report(header: str, rows: list, table: Callable[[list], str], as_json: bool = False) -> None:
    """Print a benchmark's set-up line and rows: as ``table(rows)`` text, or as JSON."""
    if as_json:
        print(json.dumps({"setup": header, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print(header)
        print(table(rows))
