"""The grader: verdict rules, failure details, and end to end on real and on
deliberately broken learner code (wrong, endless, crashing, exiting, printing)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minikernel.course import exercise as ex, grade_plugin, grade_pool
from minikernel.course.grade_detail import (
    expected_vs_got,
    failing_input,
    learner_frame,
    learner_frame_from_dump,
    one_line_call,
    test_in_words as words_for,
)
from minikernel.course.grade_plugin import pool_order
from minikernel.course.grade_report import CaseResult, GradeReport, Row, classify

ROOT = Path(__file__).resolve().parent.parent
CH01 = [i for i in ex.registry() if i.startswith("1.")]
#: Seconds a grade command may take beyond its exercises' limits: start-up (torch,
#: numba, collecting the tests) and the other exercises, on a loaded 2-core machine.
#: The sharp bound is per exercise: a hung one is killed within its limit + 10 s.
STARTUP_S = 60


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


def test_classify_names_the_blocker_its_file_and_the_failing_case():
    status, detail, fields = classify("1.2", [_r("failed", stub="1.1")])
    assert status == "BLOCKED" and "exercise 1.1 (contiguous_strides) in minikernel/strides.py" in detail
    assert fields["blocked_by"] == ["1.1"] and fields["files"] == ["minikernel/strides.py"]
    assert "3 != 4" in classify("1.2", [_r("failed", detail="AssertionError: 3 != 4")])[1]


def test_report_renders_text_html_and_json():
    report = GradeReport([Row("1.1", "a", "PASS"), Row("1.2", "b<c", "FAIL", "x < y\nsecond line")])
    assert not report.ok and (report.passed, report.total) == (1, 2)
    text = str(report)
    assert "1/2 passed" in text and "1.2" in text
    assert any(line.strip() == "second line" and line.startswith(" ") for line in text.splitlines())
    assert "b&lt;c" in report._repr_html_() and "x &lt; y" in report._repr_html_()
    assert report.to_json() == {
        "exercises": [{"id": "1.1", "name": "a", "status": "PASS", "detail": "", "fields": {}, "seconds": None},
                      {"id": "1.2", "name": "b<c", "status": "FAIL", "detail": "x < y\nsecond line", "fields": {},
                       "seconds": None}],
        "passed": 1, "total": 2}


# --- failure details -----------------------------------------------------------
def test_hypothesis_example_becomes_one_line_of_code():
    text = "\n    test_view_strides(\n        header=((2, 3), (3, 1), 0),\n        data=data(...),\n    )\n"
    assert one_line_call(text) == "test_view_strides(header=((2, 3), (3, 1), 0), data=data(...))"


def test_failing_input_keeps_the_drawn_values_and_drops_harness_advice():
    err = AssertionError("x")
    err.add_note("Falsifying example: test_x(\n    a=1,\n)")
    err.add_note("Draw 1: (2, 3)")
    err.add_note("You can reproduce this example by temporarily adding @reproduce_failure(...)")
    assert failing_input(err) == ["test_x(a=1)", "Draw 1: (2, 3)"]


def test_expected_vs_got_reads_pytests_assertion():
    assert expected_vs_got(["assert (3, 1) == (3, 2)", "  At index 1 diff: 1 != 2"]) == ("(3, 2)", "(3, 1)")
    assert expected_vs_got(["values differ"]) == ("", "")


def test_learner_frame_from_a_stack_dump_skips_the_harness():
    dump = (f'Thread 0x1 (most recent call first):\n'
            f'  File "{ROOT}/minikernel/course/grade_pool.py", line 3 in _start\n'
            f'  File "{ROOT}/minikernel/strides.py", line 1 in <module>\n'
            f'  File "{ROOT}/tests/ch01/test_strides.py", line 5 in test_x\n')
    assert learner_frame_from_dump(dump).startswith("minikernel/strides.py:1 in <module>")
    assert learner_frame_from_dump('  File "/usr/lib/python3.11/x.py", line 1 in f\n') == ""


def test_learner_frame_prefers_the_exercises_file_over_a_deeper_library_frame():
    # to_index (exercise 1.3, minikernel/strides.py) calls into minikernel/tensor.py, which raises
    scope: dict = {}
    exec(compile("def deep():\n    raise ValueError('bad shape')\n", str(ROOT / "minikernel/tensor.py"), "exec"), scope)
    exec(compile("def to_index():\n    deep()\n", str(ROOT / "minikernel/strides.py"), "exec"), scope)
    try:
        scope["to_index"]()
    except ValueError as err:
        tb = err.__traceback__
    assert learner_frame(tb).startswith("minikernel/strides.py:2 in to_index"), learner_frame(tb)


def test_learner_frame_from_a_dump_names_the_override_file(tmp_path, monkeypatch):
    case = tmp_path / "case.py"
    case.write_text('EXERCISE = "1.3"\n\n\ndef to_index(ordinal, shape, out_index):\n    while True:\n        pass\n')
    monkeypatch.setenv(ex.OVERRIDE_VAR, str(case))
    dump = (f'Thread 0x1 (most recent call first):\n'
            f'  File "{case}", line 5 in to_index\n'
            f'  File "{ROOT}/tests/ch01/test_strides.py", line 5 in test_x\n'
            f'  File "{ROOT}/minikernel/__main__.py", line 9 in main\n')
    assert learner_frame_from_dump(dump) == f"{case}:5 in to_index: while True:"


def test_learner_frame_from_a_dump_never_names_the_command_line():
    # An exercise forked by `python -m minikernel grade`, stopped inside compiled code:
    # no frame of the learner's is on the stack, only the command line's and the test's.
    dump = ('Thread 0x1 (most recent call first):\n'
            f'  File "{ROOT}/tests/ch05/test_layer_norm_gpu.py", line 5 in test_x\n'
            f'  File "{ROOT}/minikernel/course/grading.py", line 9 in run\n'
            f'  File "{ROOT}/minikernel/__main__.py", line 60 in main\n')
    assert learner_frame_from_dump(dump) == ""


def test_learner_frame_of_a_recursion_names_the_recursive_call():
    dump = ('Thread 0x1 (most recent call first):\n'
            f'  File "{ROOT}/minikernel/strides.py", line 9 in add\n'
            + f'  File "{ROOT}/minikernel/strides.py", line 3 in walk\n' * 60
            + f'  File "{ROOT}/tests/ch01/test_strides.py", line 5 in test_x\n')
    assert learner_frame_from_dump(dump).startswith("minikernel/strides.py:3 in walk"), learner_frame_from_dump(dump)


def test_test_in_words():
    assert words_for("test_view_strides[2-3]", None) == "view strides [2-3]"
    assert words_for("test_x", "Views share storage.\n\nMore.") == "Views share storage"


# --- end to end ----------------------------------------------------------------
def _grade(*args, env=None, cwd=ROOT) -> tuple[int, dict, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "minikernel", "grade", *args, "--json"],
                          env={**os.environ, **(env or {})}, cwd=cwd, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - start
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), seconds


def _left_running(marker: str) -> list[str]:
    """Processes whose command line names ``marker`` (the learner copy's path), via ps."""
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in ps.splitlines()[1:] if marker in line and "ps -eo" not in line]


def test_grade_chapter_01_in_the_current_mode():
    code, report, _ = _grade("1.*")
    statuses = {r["id"]: r["status"] for r in report["exercises"]}
    assert list(statuses) == CH01
    if ex.uses_reference("1.1"):
        assert set(statuses.values()) == {"PASS"} and code == 0, report
    else:
        assert set(statuses.values()) == {"TODO"} and code == 1, report


def _stub_line(exercise_id: str, name: str) -> str:
    return f'raise NotImplementedError("exercise {exercise_id} ({name}) is not implemented yet")'


# A learner's copy with stubs filled in: some right, some wrong, some broken in the
# ways a grader must survive. (exercise, function) -> body; file under minikernel/.
MUTANTS = {
    "strides.py": {
        ("1.1", "contiguous_strides"):  # right
            "out = [1] * len(shape)\n    for d in range(len(shape) - 2, -1, -1):\n"
            "        out[d] = out[d + 1] * max(shape[d + 1], 1)\n    return tuple(out)",
        ("1.2", "index_to_position"):  # forgets the offset
            "return sum(i * s for i, s in zip(index, strides))",
        ("1.3", "to_index"):  # never ends (Python)
            "while True:\n        pass",
        ("1.5", "infer_size"):  # leaves the interpreter
            "raise SystemExit(3)",
        ("1.5", "view_strides"):
            "raise SystemExit(3)",
        ("1.6", "permute_strides"):  # prints megabytes per call
            "print('x' * (8 << 20))\n    return tuple(shape), tuple(strides)",
        ("1.6", "expand_strides"):
            "print('x' * (8 << 20))\n    return tuple(strides)",
        ("1.6", "is_contiguous"):
            "print('x' * (8 << 20))\n    return True",
        ("1.7", "contiguous"):  # reads address 0: a segmentation fault
            "import ctypes\n    return ctypes.string_at(0)",
    },
    "kernels/cpu.py": {
        ("2.2", "cpu_map"):  # never ends, inside numba-compiled parallel code
            "for task in prange(2):\n        k = task\n        while k >= 0:\n            k = (k + 1) % 7",
    },
    "distributed/ring.py": {
        ("7.3", "ring_allreduce_chunks"):  # every rank spins forever
            "while True:\n        pass",
    },
}


def _learner_copy(tmp: Path, mutants: dict) -> Path:
    for folder in ("minikernel", "solutions", "tests"):
        shutil.copytree(ROOT / folder, tmp / folder, ignore=shutil.ignore_patterns("__pycache__", "browser"))
    shutil.copy(ROOT / "pyproject.toml", tmp)
    for file, bodies in mutants.items():
        source = tmp / "minikernel" / file
        text = source.read_text()
        for (exercise_id, name), body in bodies.items():
            assert _stub_line(exercise_id, name) in text, (file, name)
            text = text.replace(_stub_line(exercise_id, name), body)
        source.write_text(text)
    return tmp


@pytest.fixture(scope="module")
def learner_copy(tmp_path_factory) -> Path:
    return _learner_copy(tmp_path_factory.mktemp("learner"), MUTANTS)


@pytest.mark.own_mode
@pytest.mark.xdist_group("learner_copy")  # the module fixture is built once
def test_each_broken_exercise_fails_alone_and_nothing_survives(learner_copy):
    limit = 10
    env = {"PYTHONPATH": str(learner_copy), "MINIKERNEL_SOLUTIONS": ""}
    code, report, seconds = _grade("1.*", "--timeout", str(limit), "-j", "2", env=env, cwd=learner_copy)
    rows = {r["id"]: r for r in report["exercises"]}
    assert code == 1
    assert rows["1.1"]["status"] == "PASS", rows["1.1"]
    wrong = rows["1.2"]
    assert wrong["status"] == "FAIL" and wrong["fields"]["test"].startswith("test_"), wrong
    assert wrong["fields"]["input"], wrong  # hypothesis's smallest example, as code
    assert "Use -v" not in wrong["detail"] and "_pytest" not in wrong["detail"], wrong
    endless = rows["1.3"]
    assert endless["status"] == "FAIL" and f"did not finish in {limit} s (an endless loop?)" in endless["detail"]
    assert "while running: test_strides.py" in endless["detail"], endless
    assert endless["fields"]["where"].startswith("minikernel/strides.py:") and "to_index" in endless["fields"]["where"]
    assert rows["1.4"]["status"] == "TODO", rows["1.4"]
    exits = rows["1.5"]
    assert exits["status"] == "FAIL" and "SystemExit" in exits["detail"], exits
    printing = rows["1.6"]
    assert printing["status"] == "FAIL" and len(printing["detail"]) < 3000, printing
    crash = rows["1.7"]
    assert crash["status"] == "FAIL" and "SIGSEGV" in crash["detail"] and "while running" in crash["detail"], crash
    assert limit <= endless["seconds"] < limit + 10, endless
    assert seconds < 2 * limit + STARTUP_S, seconds
    assert not _left_running(str(learner_copy))


@pytest.mark.own_mode
@pytest.mark.xdist_group("learner_copy")  # the module fixture is built once
def test_compiled_endless_loop_and_a_hanging_rank_are_killed(learner_copy):
    limit = 12
    env = {"PYTHONPATH": str(learner_copy), "MINIKERNEL_SOLUTIONS": "1.*,2.1,7.1,7.2"}
    code, report, seconds = _grade("2.2", "7.3", "--timeout", str(limit), "-j", "2", env=env, cwd=learner_copy)
    rows = {r["id"]: r for r in report["exercises"]}
    assert code == 1
    for i in ("2.2", "7.3"):
        assert rows[i]["status"] == "FAIL" and f"did not finish in {limit} s" in rows[i]["detail"], rows[i]
        assert "while running: test_" in rows[i]["detail"], rows[i]
        assert limit <= rows[i]["seconds"] < limit + 10, rows[i]
    assert seconds < limit + STARTUP_S, seconds
    assert not _left_running(str(learner_copy))


@pytest.mark.own_mode
def test_grader_reports_blocked_with_the_file(tmp_path):
    # 1.7 (right, written by the learner) calls 1.3, still a stub
    right = {"strides.py": {("1.7", "contiguous"):
             "n = int(np.prod(shape))\n    return np.array([storage[index_to_position(to_index(i, shape), strides, "
             "offset)] for i in range(n)], dtype=storage.dtype)"}}
    copy = _learner_copy(tmp_path, right)
    env = {"PYTHONPATH": str(copy), "MINIKERNEL_SOLUTIONS": "1.1,1.2"}
    code, report, _ = _grade("1.7", env=env, cwd=copy)
    (row,) = report["exercises"]
    assert code == 1 and row["status"] == "BLOCKED", row
    assert "exercise 1.3 (to_index) in minikernel/strides.py" in row["detail"], row


@pytest.mark.own_mode
def test_an_exercise_stops_at_its_own_stub(tmp_path):
    # 1.6's first test (test_edges_strides.py) calls is_contiguous, still a stub: the
    # verdict is TODO whatever the later tests do, so they are not run (here they
    # would loop for ever in the two functions already written).
    endless = "while True:\n        pass"
    copy = _learner_copy(tmp_path, {"strides.py": {("1.6", "permute_strides"): endless,
                                                   ("1.6", "expand_strides"): endless}})
    limit = 10
    env = {"PYTHONPATH": str(copy), "MINIKERNEL_SOLUTIONS": ""}
    code, report, _ = _grade("1.6", "--timeout", str(limit), env=env, cwd=copy)
    (row,) = report["exercises"]
    assert code == 1 and row["status"] == "TODO" and row["seconds"] < limit, row
    assert not _left_running(str(copy))


# 1.2's function as an override: a wrong answer in the first test that calls it, then, in
# any later test, either an endless loop or the stub's own error (a body written above it).
_FIRST_TEST_WRONG_THEN = '''import os

EXERCISE = "1.2"
_first = []


def index_to_position(index, strides, offset=0):
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    _first[:] = _first or [test]
    if test == _first[0]:
        return -1
{later}
'''


def test_a_wrong_exercise_stops_at_its_first_failure(tmp_path):
    case = tmp_path / "case.py"
    case.write_text(_FIRST_TEST_WRONG_THEN.format(later="    while True:\n        pass"))
    limit = 20
    code, report, _ = _grade("1.2", "--timeout", str(limit), env={ex.OVERRIDE_VAR: str(case)})
    (row,) = report["exercises"]
    # FAIL either way; without the stop it would be the later test's endless loop, at the limit
    assert code == 1 and row["status"] == "FAIL" and row["seconds"] < limit, row
    assert "-1" in row["detail"] and "limit" not in row["detail"], row


def test_a_half_written_exercise_still_grades_todo(tmp_path):
    # The stub's raise is still in the body: a later test reaches it, so the first
    # failure does not settle the verdict.
    case = tmp_path / "case.py"
    case.write_text(_FIRST_TEST_WRONG_THEN.format(
        later='    raise NotImplementedError("exercise 1.2 (index_to_position) is not implemented yet")'))
    code, report, _ = _grade("1.2", env={ex.OVERRIDE_VAR: str(case)})
    (row,) = report["exercises"]
    assert code == 1 and row["status"] == "TODO", row


def test_bad_timeout_is_refused():
    proc = subprocess.run([sys.executable, "-m", "minikernel", "grade", "1.1", "--timeout", "0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--timeout" in proc.stderr and "positive" in proc.stderr


def test_the_parents_warm_up_imports_what_torch_imports_late():
    """Each of ``TORCH_LATE_IMPORTS`` is left out by ``import torch`` and brought in by
    something the exercises' tests call (so that every exercise's process would pay for
    it), and ``warm_up`` imports them all once, before the fork."""
    code = ("import sys, torch\n"
            "from minikernel.course.grade_pool import TORCH_LATE_IMPORTS, warm_up\n"
            "late = [m for m in TORCH_LATE_IMPORTS if m not in sys.modules]\n"
            "torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)\n"
            "torch.testing.assert_close(torch.ones(2), torch.ones(2))\n"
            "torch.broadcast_shapes((2, 1), (1, 3))\n"
            "brought = [m for m in TORCH_LATE_IMPORTS if m in sys.modules]\n"
            "warm_up()\n"
            "print(late == list(TORCH_LATE_IMPORTS), brought == list(TORCH_LATE_IMPORTS),\n"
            "      all(m in sys.modules for m in TORCH_LATE_IMPORTS))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True"], out.stdout


def test_the_first_exercise_runs_while_the_pool_warms_up(tmp_path):
    log = tmp_path / "log.txt"

    def note(line: str) -> None:
        with open(log, "a") as f:
            f.write(line + "\n")

    def run_one(exercise_id, items):
        note(f"start {exercise_id}")
        time.sleep(0.2)
        note(f"end {exercise_id}")

    def warm():
        deadline = time.monotonic() + 20
        while "start a" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.01)  # the first exercise's process runs meanwhile
        note("warm")

    grade_pool.run_all({"a": [], "b": [], "c": []}, run_one, out=tmp_path, timeout_s=30, jobs=2, warm=warm)
    lines = log.read_text().splitlines()
    assert lines.index("start a") < lines.index("warm") < lines.index("start b") < lines.index("start c"), lines
    assert all(json.loads((tmp_path / f"{i}.outcome").read_text())["exit"] == 0 for i in "abc")


def test_the_exercise_with_the_most_tests_is_graded_first_then_id_order():
    groups = {"1.1": [1], "1.2": [1, 2], "3.3": [1, 2, 3, 4], "10.1": [1, 2, 3]}
    assert list(pool_order(groups)) == ["3.3", "1.1", "1.2", "10.1"]
    assert pool_order({}) == {}


def test_the_plugins_loop_runs_before_pytests_own():
    """The grading plugin's ``pytest_runtestloop`` must be asked first (``tryfirst``): pytest's
    own loop would run every test in the grading process itself."""
    assert getattr(grade_plugin.pytest_runtestloop, "pytest_impl", {}).get("tryfirst") is True
    assert not hasattr(pool_order, "pytest_impl")
