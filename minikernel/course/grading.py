"""The grader: run the exercise tests, one verdict per exercise.

``python -m minikernel grade [IDs|globs] [--json] [--timeout S] [-j N]`` and
``minikernel.grade("1.*")`` run ``tests/chNN`` on your files as they are on disk (so
edits count without a kernel restart) and report, per exercise:

* PASS     every test of the exercise passes;
* FAIL     a test fails (the detail shows the test, the smallest failing input as
           code, expected vs got and your line), or the exercise hung or crashed;
* TODO     the stub is untouched (its NotImplementedError was raised);
* BLOCKED  your code calls an earlier exercise that is still TODO (named, with its file).

Each exercise runs in its own process group under a wall-clock limit, so an endless
loop (in Python or in compiled numba code) or a crash fails that exercise only.
Which code runs (yours or the reference) follows ``MINIKERNEL_SOLUTIONS`` as usual.
OpenMP's idle threads sleep while grading (``OMP_WAIT_POLICY=PASSIVE`` unless set; see
``minikernel/openmp_policy.py``): the exercises graded at once share the cores.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from . import exercise as ex
from .grade_report import CaseResult, GradeReport, Row, classify
from .grade_runner import ended_badly, run_session

#: Wall-clock seconds one exercise's tests may take, all together.
TIMEOUT_S = 60


def default_jobs() -> int:
    """Exercises graded at once: one per core this process may use."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def run(patterns: list[str] | None = None, timeout_s: float = TIMEOUT_S, jobs: int | None = None,
        fork: bool = False) -> GradeReport:
    """Run the tests of the exercises that ``patterns`` select (all when empty).

    ``fork``: this process imported minikernel just now (the command line), so a
    forked copy of it may grade; otherwise (a notebook) the warm grading server
    (``grade_server``) or a new interpreter grades, so that the latest edits count."""
    if timeout_s <= 0:
        raise ValueError(f"the time limit must be a positive number of seconds, not {timeout_s:g}")
    ids = ex.select(patterns)
    registry = ex.registry()
    session = run_session(ids, timeout_s=timeout_s, jobs=jobs or default_jobs(), fork=fork and hasattr(os, "fork"))
    rows = []
    for i in ids:
        exercise_run = session.runs[i]
        seconds = exercise_run.outcome.get("seconds")
        bad = ended_badly(exercise_run, timeout_s)
        if bad is not None:
            rows.append(Row(i, registry[i].name, "FAIL", *bad, seconds=seconds))
            continue
        results = [CaseResult(**r) for r in exercise_run.results]
        status, detail, fields = classify(i, results)
        if session.collect_errors and status == "FAIL" and not results:
            detail = "its tests could not be loaded (see the error below)"
        rows.append(Row(i, registry[i].name, status, detail, fields, seconds))
    error = "\n".join(filter(None, [session.error, *session.collect_errors]))
    return GradeReport(rows, error=error)


def grade(*patterns: str, timeout: float = TIMEOUT_S) -> GradeReport:
    """Grade exercises from a notebook: ``minikernel.grade("1.*")`` shows a table.

    Args:
        *patterns: exercise IDs ("1.2") or chapter globs ("1.*"); none means all.
        timeout: wall-clock seconds each exercise may take.
    """
    return run(list(patterns), timeout)


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value
    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikernel grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="*", help="exercise IDs or chapter globs, e.g. 1.2 '1.*' (default: all)")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    parser.add_argument("--timeout", type=_positive(float), default=TIMEOUT_S, metavar="S",
                        help=f"wall-clock seconds per exercise (default {TIMEOUT_S})")
    parser.add_argument("-j", "--jobs", type=_positive(int), default=None, metavar="N",
                        help="exercises graded at once (default: the number of cores)")
    args = parser.parse_args(argv)
    try:
        report = run(args.patterns, args.timeout, args.jobs, fork=True)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else report)
    return 0 if report.ok else 1
