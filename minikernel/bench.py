"""``python -m minikernel bench [--json] [--quick]``: time minikernel against PyTorch.

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

from .exercise import stub_exercise_id

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


def _load_rows() -> None:
    from . import bench_rows  # noqa: F401 - registers every chapter's rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikernel bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--quick", action="store_true", help="1 warm-up, 3 repeats (a smoke test, not a measurement)")
    parser.add_argument("-k", dest="match", default="", help="only rows whose name contains this")
    parser.add_argument("--allreduce", action="store_true",
                        help="time ring vs naive vs dist.all_reduce across rank processes (chapter 07)")
    parser.add_argument("--world", type=int, action="append", metavar="N",
                        help="with --allreduce: only this world size (repeatable; default 2 and 4)")
    parser.add_argument("--size", action="append", choices=["1K", "1M", "16M"],
                        help="with --allreduce: only this buffer size (repeatable; default all three)")
    args = parser.parse_args(argv)
    if args.allreduce:
        from .distributed.bench import main as allreduce_main
        return allreduce_main(json_out=args.json, quick=args.quick, worlds=args.world, sizes=args.size)
    if args.world or args.size:
        parser.error("--world and --size go with --allreduce")
    _load_rows()
    warmup, repeat = (1, 3) if args.quick else (3, 15)
    import torch

    header = f"torch {torch.__version__}, {torch.get_num_threads()} threads, warm-up {warmup}, median of {repeat}"
    results = [run_row(r, warmup, repeat) for r in ROWS if args.match in r.name]
    report(header, results, format_table, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
