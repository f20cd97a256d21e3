"""``python -m minikernel bench [--json] [--quick] [-k TEXT] [--allreduce]``.

Loads every chapter's rows (``rows_kernels``, ``rows_norm``) and times them with
``timing``; ``--allreduce`` times the chapter 07 allreduces across rank processes
instead (``allreduce``).

``-k TEXT`` keeps the rows whose name contains ``TEXT``, ignoring case; ``|``
separates alternatives (``-k "matmul|reduce"``). When no row matches, the command
says so on one line, lists the row names, and exits with status 2.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

from ...kernels.cpu_tiles import REFERENCE_TILES
from . import gpu, rows_kernels, rows_norm  # noqa: F401 - importing the rows modules registers their rows
from .allreduce import main as allreduce_main
from .machine import busy_cores, cpu_model, describe, isa, keep_freed_memory, load_average
from .timing import (
    MAX_ROUNDS,
    ROWS,
    SPREAD_LIMIT_PCT,
    Row,
    format_table,
    machine_yardsticks,
    median_ms,
    report,
    run_row,
)


def select(rows: list[Row], match: str) -> list[Row]:
    """The rows whose name contains one of ``match``'s ``|``-separated alternatives, ignoring case."""
    wanted = [part.strip().lower() for part in match.split("|") if part.strip()] or [""]
    return [r for r in rows if any(w in r.name.lower() for w in wanted)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikernel bench", description="time minikernel against PyTorch")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--quick", action="store_true", help="1 warm-up, 3 repeats (a smoke test, not a measurement)")
    parser.add_argument("-k", dest="match", default="",
                        help='only rows whose name contains this text (any case); "a|b": either')
    parser.add_argument("--allreduce", action="store_true",
                        help="time ring vs naive vs dist.all_reduce across rank processes (chapter 07)")
    parser.add_argument("--world", type=int, action="append", metavar="N",
                        help="with --allreduce: only this world size (repeatable; default 2 and 4)")
    parser.add_argument("--size", action="append", choices=["1K", "1M", "16M"],
                        help="with --allreduce: only this buffer size (repeatable; default all three)")
    args = parser.parse_args(argv)
    if args.allreduce:
        return allreduce_main(json_out=args.json, quick=args.quick, worlds=args.world, sizes=args.size)
    if args.world or args.size:
        parser.error("--world and --size go with --allreduce")
    selected = select(ROWS, args.match)
    if not selected:
        hint = " (the allreduces are timed with --allreduce)" if "allreduce" in args.match.lower() else ""
        print(f"bench: no row matches -k {args.match!r}{hint}; the rows are: " + "; ".join(r.name for r in ROWS),
              file=sys.stderr)
        return 2
    warm_outputs, load_before, busy = keep_freed_memory(), load_average(), busy_cores()
    warmup, repeat, rounds = (1, 3, 1) if args.quick else (3, 15, MAX_ROUNDS)
    machine = machine_yardsticks(3 if args.quick else 7)
    header = (f"torch {torch.__version__}, warm-up {warmup}, median of {repeat} samples a side taken in turns"
              f"{f', up to {rounds} rounds while a spread exceeds {SPREAD_LIMIT_PCT:.0f}%' if rounds > 1 else ''}; "
              f"this machine: copy {machine['copy_gb_per_s']:.1f} GB/s, "
              f"torch.mm 1024 {machine['torch_mm_1024_gflop_per_s']:.1f} GFLOP/s")
    if any(r.skip is not None and not r.skip() for r in selected):  # GPU rows that will run
        machine.update(gpu.yardsticks(median_ms))
        if "gpu" in machine:
            header += (f"; GPU {machine['gpu']}: copy {machine['gpu_copy_gb_per_s']:.0f} GB/s, "
                       f"torch.mm 4096 {machine['gpu_torch_mm_4096_gflop_per_s']:.0f} GFLOP/s "
                       f"(TF32 {'on' if machine['gpu_tf32_matmul'] else 'off'})")
    results = [run_row(r, warmup, repeat, rounds) for r in selected]
    # After the rows: numba names its threading layer once a parallel kernel has run.
    machine.update(cpu=cpu_model(), isa=isa(), cores=os.cpu_count(), warm_outputs=warm_outputs,
                   load_average_before=load_before, load_average_after=load_average(), busy_cores_before=busy,
                   matmul_tiles=REFERENCE_TILES.describe())
    header = "\n".join([describe(warm_outputs, load_before, busy), header, REFERENCE_TILES.describe()
                         + (" (the reference's; exercise 2.5 uses sizes.CPU_TILE_*)")])
    report(header, results, format_table, as_json=args.json, machine=machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
