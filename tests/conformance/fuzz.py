"""``make fuzz ARGS="--minutes 30"``: random programs against torch for a given time.

Prints how many programs ran and how many diverged; each divergence is written to
``tests/conformance/found/test_found_<seed>.py`` as a test that replays it (the
program is plain data), so it runs in ``make test`` from then on, until fixed.
Seeds start after the ones ``make test`` already runs (``--start`` to choose).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

from tests.conformance.programs import Divergence, draw_program, run_program
from tests.conformance.test_fuzz import PROGRAMS

FOUND = pathlib.Path(__file__).parent / "found"

TEMPLATE = '''"""A program the fuzzer found diverging from torch (seed {seed}): {summary}"""
from tests.conformance.programs import run_program

PROGRAM = [
{steps}
]


def test_found_{seed}_matches_torch():
    run_program(PROGRAM)
'''


def write_case(seed: int, program: list, error: Divergence) -> pathlib.Path:
    FOUND.mkdir(exist_ok=True)
    path = FOUND / f"test_found_{seed}.py"
    summary = str(error).splitlines()[0][:200].replace('"', "'")  # (a quote next to the docstring's would end it)
    path.write_text(TEMPLATE.format(seed=seed, summary=summary, steps="\n".join(f"    {s!r}," for s in program)))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to run (default 5)")
    parser.add_argument("--start", type=int, default=PROGRAMS, help="first seed (default: after make test's)")
    parser.add_argument("--max-steps", type=int, default=12, help="steps per program (default 12)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.max_steps < 1:
        parser.error("--minutes must be > 0 and --max-steps >= 1")
    deadline, seed, tried, found = time.monotonic() + 60 * args.minutes, args.start, 0, []
    while time.monotonic() < deadline:
        program = draw_program(seed, args.max_steps)
        try:
            run_program(program)
        except Divergence as err:
            found.append(write_case(seed, program, err))
            print(f"seed {seed}: {str(err).splitlines()[0][:160]}", flush=True)
        tried, seed = tried + 1, seed + 1
    print(f"{tried} programs tried (seeds {args.start}-{seed - 1}), {len(found)} divergences found"
          + "".join(f"\n  written: {p}" for p in found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
