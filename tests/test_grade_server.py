"""The notebooks' warm grading server: a grade reads the learner's files from disk even
when the notebook imported them before the edit, and the isolation of each exercise
(limit, crash, nothing left running) holds through the server as from a new interpreter."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minikernel.course import grade_server
from tests.test_grader import MUTANTS, _learner_copy, _left_running, _stub_line

ROOT = Path(__file__).resolve().parent.parent
RIGHT_1_1 = MUTANTS["strides.py"][("1.1", "contiguous_strides")]

# A notebook's kernel: imports minikernel, grades, edits its file, grades again.
NOTEBOOK = '''import json, os, sys
from pathlib import Path
import minikernel as mk
from minikernel.course import grade_server
ids, timeout, edit = json.loads(sys.argv[1])
served = grade_server.socket_path(dict(os.environ))
before = mk.grade(*ids, timeout=timeout)
served_before = served.exists()
strides = Path(mk.__file__).parent / "strides.py"
strides.write_text(strides.read_text().replace(edit[0], edit[1]))
after = mk.grade(*ids, timeout=timeout)
print(json.dumps({"before": before.to_json(), "after": after.to_json(), "served": served_before and served.exists()}))
'''


def _notebook(copy: Path, ids: list[str], timeout: float, edit: tuple[str, str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(copy), "MINIKERNEL_SOLUTIONS": "", "MINIKERNEL_GRADE_SERVER": "1",
           "MINIKERNEL_GRADE_SERVER_IDLE": "20"}
    proc = subprocess.run([sys.executable, "-c", NOTEBOOK, json.dumps([ids, timeout, edit])], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _statuses(report: dict) -> dict[str, str]:
    return {row["id"]: row["status"] for row in report["exercises"]}


def _gone(marker: str, within_s: float = 90) -> bool:
    """Whether no process naming ``marker`` is left, the idle server included, within ``within_s``."""
    end = time.monotonic() + within_s
    while _left_running(marker):
        if time.monotonic() > end:
            return False
        time.sleep(0.5)
    return True


@pytest.mark.own_mode
def test_a_notebook_grades_the_file_edited_after_its_imports(tmp_path):
    copy = _learner_copy(tmp_path, {})
    result = _notebook(copy, ["1.1"], 60, (_stub_line("1.1", "contiguous_strides"), RIGHT_1_1))
    assert result["served"], result  # graded by the server, not a new interpreter
    assert _statuses(result["before"]) == {"1.1": "TODO"}, result
    assert _statuses(result["after"]) == {"1.1": "PASS"}, result
    assert _gone(str(copy)), _left_running(str(copy))


@pytest.mark.own_mode
def test_through_the_server_a_hang_and_a_crash_fail_alone(tmp_path):
    mutants = {"strides.py": {key: body for key, body in MUTANTS["strides.py"].items() if key[0] in ("1.1", "1.3", "1.7")}}
    copy = _learner_copy(tmp_path, mutants)
    limit = 8
    # The edit in between puts 1.2's offset bug in: the second grade must see it.
    stub_1_2 = _stub_line("1.2", "index_to_position")
    result = _notebook(copy, ["1.1", "1.2", "1.3", "1.7"], limit, (stub_1_2, "return sum(i * s for i, s in zip(index, strides))"))
    assert result["served"], result
    assert _statuses(result["before"]) == {"1.1": "PASS", "1.2": "TODO", "1.3": "FAIL", "1.7": "FAIL"}, result
    rows = {row["id"]: row for row in result["after"]["exercises"]}
    assert rows["1.2"]["status"] == "FAIL" and "did not finish" not in rows["1.2"]["detail"], rows["1.2"]
    assert f"did not finish in {limit:g} s" in rows["1.3"]["detail"], rows["1.3"]
    assert limit <= rows["1.3"]["seconds"] < limit + 10, rows["1.3"]
    assert "SIGSEGV" in rows["1.7"]["detail"], rows["1.7"]
    assert rows["1.1"]["status"] == "PASS", rows["1.1"]
    assert _gone(str(copy)), _left_running(str(copy))


@pytest.mark.own_mode
def test_two_notebooks_grade_at_once(tmp_path):
    # One notebook's grade hangs until its limit; the other's, asked meanwhile, is not kept waiting.
    copy = _learner_copy(tmp_path, {"strides.py": {key: body for key, body in MUTANTS["strides.py"].items()
                                                   if key[0] in ("1.1", "1.3")}})
    env = {**os.environ, "PYTHONPATH": str(copy), "MINIKERNEL_SOLUTIONS": "", "MINIKERNEL_GRADE_SERVER": "1",
           "MINIKERNEL_GRADE_SERVER_IDLE": "20"}
    grade = "import json, minikernel as mk; print(json.dumps(mk.grade({ids!r}, timeout=90).to_json()))"
    hanging = subprocess.Popen([sys.executable, "-c", grade.format(ids="1.3")], cwd=copy, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        where = ("import os, minikernel; from minikernel.course import grade_server; "
                 "print(grade_server.socket_path(dict(os.environ)))")
        path = Path(subprocess.run([sys.executable, "-c", where], cwd=copy, env=env, capture_output=True, text=True,
                                   check=True, timeout=600).stdout.strip())
        while not path.exists() and hanging.poll() is None:
            time.sleep(0.2)
        quick = subprocess.run([sys.executable, "-c", grade.format(ids="1.1")], cwd=copy, env=env,
                               capture_output=True, text=True, timeout=600)
        still_hanging = hanging.poll() is None
    finally:
        out, err = hanging.communicate(timeout=600)
    assert _statuses(json.loads(quick.stdout)) == {"1.1": "PASS"}, quick.stderr[-3000:]
    assert still_hanging, "the second grade waited for the first one's endless loop"
    assert _statuses(json.loads(out)) == {"1.3": "FAIL"}, err[-3000:]
    assert _gone(str(copy)), _left_running(str(copy))


def test_one_server_per_course_folder_python_and_import_time_settings(monkeypatch):
    base = {"MINIKERNEL_SOLUTIONS": "", "NUMBA_ENABLE_CUDASIM": "1", "OMP_NUM_THREADS": "1"}
    same = grade_server.socket_path(base)
    assert grade_server.socket_path({**base, "MINIKERNEL_SOLUTIONS": "all", "HOME": "/x"}) == same
    assert grade_server.socket_path({**base, "OMP_NUM_THREADS": "2"}) != same
    assert grade_server.socket_path({**base, "NUMBA_ENABLE_CUDASIM": "0"}) != same
    assert oct(same.parent.stat().st_mode & 0o777) == oct(0o700)
    monkeypatch.setattr(grade_server, "ROOT", Path("/elsewhere"))
    assert grade_server.socket_path(base) != same


@pytest.mark.parametrize("value, on", [("0", False), ("", False), ("1", True), (None, True)])
def test_the_switch(value, on):
    env = {} if value is None else {grade_server.SWITCH: value}
    assert grade_server.enabled(env) is on
