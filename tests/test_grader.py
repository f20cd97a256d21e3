"""The grader: verdict rules, and end to end on real (and deliberately wrong) code."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minikernel.course import exercise as ex
from minikernel.course.grading import CaseResult, GradeReport, Row, classify

ROOT = Path(__file__).resolve().parent.parent
CH01 = [i for i in ex.registry() if i.startswith("1.")]


def _r(outcome, ids=("1.2",), stub=None, detail=""):
    return CaseResult(nodeid="tests/ch01/x.py::test_x", exercises=list(ids), outcome=outcome, stub=stub, detail=detail)


@pytest.mark.parametrize("results, expected", [
    ([_r("passed"), _r("passed")], "PASS"),
    ([_r("passed"), _r("failed", detail="AssertionError: 3 != 4")], "FAIL"),
    ([_r("failed", stub="1.2"), _r("failed", detail="boom")], "TODO"),
    ([_r("failed", stub="1.1"), _r("passed")], "BLOCKED"),
    ([_r("failed", stub="1.1"), _r("failed", detail="wrong")], "FAIL"),
    ([_r("skipped")], "FAIL"),
    ([_r("passed", ids=("1.3",))], "FAIL"),  # no test of 1.2 at all
])
def test_classify(results, expected):
    assert classify("1.2", results)[0] == expected


def test_classify_names_the_blocker_and_the_failing_case():
    assert "exercise 1.1" in classify("1.2", [_r("failed", stub="1.1")])[1]
    assert "3 != 4" in classify("1.2", [_r("failed", detail="AssertionError: 3 != 4")])[1]


def test_report_renders_text_html_and_json():
    report = GradeReport([Row("1.1", "a", "PASS"), Row("1.2", "b<c", "FAIL", "x < y")])
    assert not report.ok and (report.passed, report.total) == (1, 2)
    assert "1/2 passed" in str(report) and "1.2" in str(report)
    assert "b&lt;c" in report._repr_html_() and "x &lt; y" in report._repr_html_()
    assert report.to_json() == {"exercises": [{"id": "1.1", "name": "a", "status": "PASS", "detail": ""},
                                              {"id": "1.2", "name": "b<c", "status": "FAIL", "detail": "x < y"}],
                                "passed": 1, "total": 2}


def _grade(*args, env=None, cwd=ROOT) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "minikernel", "grade", *args, "--json"],
                          env={**os.environ, **(env or {})}, cwd=cwd, capture_output=True, text=True, timeout=300)
    return proc.returncode, json.loads(proc.stdout)


def test_grade_chapter_01_in_the_current_mode():
    code, report = _grade("1.*")
    statuses = {r["id"]: r["status"] for r in report["exercises"]}
    assert list(statuses) == CH01
    if ex.uses_reference("1.1"):
        assert set(statuses.values()) == {"PASS"} and code == 0, report
    else:
        assert set(statuses.values()) == {"TODO"} and code == 1, report


# --- a learner's copy of minikernel with some stubs filled in, some wrong ------
def _stub_line(exercise_id: str, name: str) -> str:
    return f'raise NotImplementedError("exercise {exercise_id} ({name}) is not implemented yet")'


MUTANTS = {
    ("1.1", "contiguous_strides"):  # right
        "out = [1] * len(shape)\n    for d in range(len(shape) - 2, -1, -1):\n"
        "        out[d] = out[d + 1] * max(shape[d + 1], 1)\n    return tuple(out)",
    ("1.2", "index_to_position"):  # forgets the offset
        "return sum(i * s for i, s in zip(index, strides))",
    ("1.3", "to_index"):  # never ends
        "while True:\n        pass",
    ("1.7", "contiguous"):  # right, but calls 1.3 and 1.2
        "n = int(np.prod(shape))\n    return np.array([storage[index_to_position(to_index(i, shape), strides, offset)]"
        " for i in range(n)], dtype=storage.dtype)",
}


@pytest.fixture(scope="module")
def learner_copy(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("learner")
    shutil.copytree(ROOT / "minikernel", tmp / "minikernel", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", tmp / "tests", ignore=shutil.ignore_patterns("__pycache__", "browser"))
    shutil.copy(ROOT / "pyproject.toml", tmp)
    source = tmp / "minikernel" / "strides.py"
    text = source.read_text()
    for (exercise_id, name), body in MUTANTS.items():
        assert _stub_line(exercise_id, name) in text
        text = text.replace(_stub_line(exercise_id, name), body)
    source.write_text(text)
    return tmp


def test_grader_on_a_learners_partial_work(learner_copy):
    env = {"PYTHONPATH": str(learner_copy), "MINIKERNEL_SOLUTIONS": ""}
    code, report = _grade("1.1", "1.2", "1.3", "1.4", "1.7", "--timeout", "3", env=env, cwd=learner_copy)
    rows = {r["id"]: r for r in report["exercises"]}
    assert code == 1
    assert rows["1.1"]["status"] == "PASS", rows["1.1"]
    assert rows["1.2"]["status"] == "FAIL" and "Failing test case" in rows["1.2"]["detail"], rows["1.2"]
    assert rows["1.3"]["status"] == "FAIL" and "timed out" in rows["1.3"]["detail"], rows["1.3"]
    assert rows["1.4"]["status"] == "TODO", rows["1.4"]
    assert rows["1.7"]["status"] == "FAIL", rows["1.7"]  # 1.3 loops forever inside it


def test_grader_reports_blocked(learner_copy):
    env = {"PYTHONPATH": str(learner_copy), "MINIKERNEL_SOLUTIONS": "1.1,1.2"}  # 1.3 stays the endless loop
    strides = learner_copy / "minikernel" / "strides.py"
    text = strides.read_text()
    strides.write_text(text.replace("while True:\n        pass", _stub_line("1.3", "to_index")))
    try:
        code, report = _grade("1.7", env=env, cwd=learner_copy)
    finally:
        strides.write_text(text)
    (row,) = report["exercises"]
    assert code == 1 and row["status"] == "BLOCKED" and "exercise 1.3" in row["detail"], row
