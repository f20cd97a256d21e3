"""Numbered order is a valid solving order: exercise N.k needs no exercise after it.

For each exercise, ``python -m minikernel grade N.k --json`` runs with the references of
N.k and of every exercise before it switched on (``MINIKERNEL_SOLUTIONS="1.1,...,N.k"``)
and every later exercise left as its stub. It must grade PASS: BLOCKED means one of its
tests calls a later exercise (the grade names which), so a learner solving in order
would meet it before they could have written it. The remedy is in the tests: a test
that needs a later exercise carries that exercise's marker instead.

Each grade runs in a fork of the corpus zygote (``zygote.py``), two at a time; this is
the corpus layer's (``MINIKERNEL_CORPUS=1``, see conftest.py), since grading all
exercises this way takes minutes. ``MINIKERNEL_ORDER_SELECT`` (a glob on the ID, e.g.
``'3.*'``) checks some exercises only; ``MINIKERNEL_CORPUS_SHARD=k/n`` shares the
exercises out as it shares the corpus.
"""
from __future__ import annotations

import fnmatch
import json
import os
import sys

import pytest

from minikernel.course import exercise as ex

from .forks import grade_in_forks, grader_env

WORKERS = int(os.environ.get("MINIKERNEL_CORPUS_WORKERS", "2"))
PER_TEST_TIMEOUT_S = 60
LIMIT_S = 600


def requests_in_order(ids: list[str], selected: list[str]) -> list[dict]:
    """One grade request per selected exercise: its reference and every earlier one on."""
    return [{"case": i, "exercise": i, "args": ["--json", f"--timeout={PER_TEST_TIMEOUT_S}"],
             "env": grader_env(",".join(ids[:ids.index(i) + 1]))} for i in selected]


def status_of(exercise_id: str, reply: dict) -> tuple[str, str]:
    """(status, detail) of ``exercise_id`` from a zygote reply; HANG or ERROR when no verdict came."""
    if reply["hung"]:
        return "HANG", f"the grader was still running after {LIMIT_S} s"
    try:
        report = json.loads(reply["stdout"])
    except json.JSONDecodeError:
        return "ERROR", "no JSON from the grader:\n" + "\n".join(
            (reply["stdout"] + reply["stderr"]).strip().splitlines()[-6:])
    if report.get("error"):
        return "ERROR", report["error"]
    row = next(r for r in report["exercises"] if r["id"] == exercise_id)
    return row["status"], row["detail"]


def test_requests_switch_on_exactly_the_exercises_up_to_each_one():
    ids = ["1.1", "1.2", "2.1", "10.1"]
    got = {r["exercise"]: r["env"]["MINIKERNEL_SOLUTIONS"] for r in requests_in_order(ids, ["1.1", "2.1", "10.1"])}
    assert got == {"1.1": "1.1", "2.1": "1.1,1.2,2.1", "10.1": "1.1,1.2,2.1,10.1"}
    assert ex.parse_selection(got["2.1"]) == ["1.1", "1.2", "2.1"]


@pytest.mark.timeout(0)  # the limit is per exercise (LIMIT_S)
def test_each_exercise_passes_with_only_itself_and_earlier_references(capsys):
    ids = sorted(ex.registry(), key=ex.id_key)
    pattern = os.environ.get("MINIKERNEL_ORDER_SELECT", "*")
    selected = [i for i in ids if fnmatch.fnmatchcase(i, pattern)]
    shard = os.environ.get("MINIKERNEL_CORPUS_SHARD", "1/1")
    k, n = (int(v) for v in shard.split("/"))
    selected = selected[k - 1::n]
    assert selected, f"MINIKERNEL_ORDER_SELECT={pattern!r} (shard {shard}) selects no exercise"
    problems = []
    with capsys.disabled():
        print(f"\ngrading {len(selected)} exercises, each with only the references up to it", file=sys.stderr)
        for reply in grade_in_forks(requests_in_order(ids, selected), WORKERS, LIMIT_S):
            status, detail = status_of(reply["case"], reply)
            print(f"  {reply['case']}: {status} {reply['seconds']:.0f} s", file=sys.stderr, flush=True)
            if status != "PASS":
                later = " (a LATER exercise: numbered order is not a valid order)" if status == "BLOCKED" else ""
                problems.append(f"{reply['case']}: {status}{later}: {detail.splitlines()[0] if detail else ''}")
    assert not problems, "with only the references up to it switched on:\n" + "\n".join(problems)
