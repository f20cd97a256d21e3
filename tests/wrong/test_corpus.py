"""Grade every wrong solution of the corpus: each must grade FAIL.

For each case, ``python -m minikernel grade <ID> --json`` runs with the references on
(``MINIKERNEL_SOLUTIONS=all``) and the case's body in place of the exercise's
(``MINIKERNEL_OVERRIDE=<case file>``). A case is caught when its exercise grades FAIL;
PASS (a false pass), TODO/BLOCKED, a grader that could not run the tests, or a grader
still running after ``CASE_LIMIT_S`` (a hang) are misses. Cases are graded two at a
time, each in a fork of one process that imported torch and pytest once (zygote.py);
the catch rate and every miss are printed at the end of the run.

Collected only with ``MINIKERNEL_CORPUS=1`` (see conftest.py). ``MINIKERNEL_CORPUS_SELECT``
(a glob on ``chNN/<file stem>``, e.g. ``ch02/2_5_*``) grades just some cases;
``MINIKERNEL_CORPUS_SHARD=k/n`` grades the k-th of n interleaved shares (1 <= k <= n),
so n machines or jobs can split the corpus.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from . import conftest
from .cases import Case, all_cases
from .forks import grade_in_forks, grader_env

ROOT = Path(__file__).resolve().parents[2]
WORKERS = int(os.environ.get("MINIKERNEL_CORPUS_WORKERS", "2"))
PER_TEST_TIMEOUT_S = 60  # the grader's own limit per test: an endless loop grades FAIL (generous: a slow
# machine must not fail a correct test, which would count a case as caught for the wrong reason)
CASE_LIMIT_S = 600  # past this the grader itself hung: a miss
CRASH_RE = re.compile(r"pytest exited with -\d+")  # killed by a signal


def verdict(case: Case, result: dict) -> tuple[Case, str, str, float]:
    """(case, verdict, detail, seconds) from the zygote's line: the exercise's status, or HANG/ERROR."""
    seconds = result["seconds"]
    if result["hung"]:
        return case, "HANG", f"the grader was still running after {CASE_LIMIT_S} s", seconds
    try:
        report = json.loads(result["stdout"])
    except json.JSONDecodeError:
        tail = "\n".join((result["stdout"] + result["stderr"]).strip().splitlines()[-6:])
        return case, "ERROR", f"no JSON from the grader (exit {result['exit']}):\n{tail}", seconds
    error = report.get("error", "")
    if error and not CRASH_RE.search(error):
        # The tests did not run as written (the case does not import, a collection error):
        # a FAIL then says nothing about the case. A crash (a signal: an out-of-bounds
        # write in compiled code) is the case's doing, and grades FAIL.
        return case, "ERROR", error, seconds
    row = next(r for r in report["exercises"] if r["id"] == case.exercise)
    return case, row["status"], row["detail"], seconds


def grade_all(cases: list[Case]) -> list[tuple[Case, str, str, float]]:
    """Grade every case (``python -m minikernel grade N.M --json`` each, forked from one
    zygote process: see zygote.py), printing a line per case as it finishes."""
    requests = [{"case": str(c.path), "exercise": c.exercise, "args": ["--json", f"--timeout={PER_TEST_TIMEOUT_S}"],
                 "env": {**grader_env("all"), "MINIKERNEL_OVERRIDE": str(c.path)}} for c in cases]
    by_path = {str(c.path): c for c in cases}
    results = []
    for reported in grade_in_forks(requests, WORKERS, CASE_LIMIT_S):
        result = verdict(by_path[reported["case"]], reported)
        shown = "caught" if result[1] == "FAIL" else f"MISS ({result[1]})"
        print(f"  {result[0].name}: {shown} {result[3]:.0f} s", file=sys.stderr, flush=True)
        results.append(result)
    graded = {str(r[0].path) for r in results}
    results += [(c, "ERROR", "the zygote reported nothing for it", 0.0) for c in cases if str(c.path) not in graded]
    return results


@pytest.mark.timeout(0)  # many cases: the limit is per case (CASE_LIMIT_S), not on the whole run
def test_every_wrong_solution_grades_fail(capsys):
    pattern = os.environ.get("MINIKERNEL_CORPUS_SELECT", "*")
    cases = [c for c in all_cases() if fnmatch.fnmatchcase(c.name, pattern)]
    shard = os.environ.get("MINIKERNEL_CORPUS_SHARD", "1/1")
    k, n = (int(v) for v in shard.split("/"))
    assert 1 <= k <= n, f"MINIKERNEL_CORPUS_SHARD={shard!r}: give k/n with 1 <= k <= n"
    cases = cases[k - 1::n]
    assert cases, f"MINIKERNEL_CORPUS_SELECT={pattern!r} (shard {shard}) selects no case"
    start = time.monotonic()
    with capsys.disabled():
        print(f"\ngrading {len(cases)} wrong solutions, {WORKERS} at a time", file=sys.stderr, flush=True)
        results = grade_all(cases)
    wall = time.monotonic() - start
    misses = [(c, v, d) for c, v, d, _ in results if v != "FAIL"]
    caught = len(results) - len(misses)
    rate = 100.0 * caught / len(results) if results else 0.0
    slowest = sorted(results, key=lambda r: -r[3])[:3]
    conftest.SUMMARY[:] = [
        (f"catch rate: {caught}/{len(results)} wrong solutions graded FAIL ({rate:.1f}%), "
         f"{len({c.exercise for c in cases})} exercises, {wall:.0f} s with {WORKERS} workers"),
        "slowest: " + ", ".join(f"{c.name} {s:.0f} s" for c, _, _, s in slowest),
    ] + [f"MISS {c.name} ({c.exercise}: {c.mistake}): {v} {d.splitlines()[0] if d else ''}"
         for c, v, d in misses]
    assert not misses, "\n".join(conftest.SUMMARY)
