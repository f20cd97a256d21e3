"""Which test files the grader collects for a selection of exercises: every file with a
test of a selected exercise, whatever way its marker is written and whichever chapter's
folder holds it, and none of the files without one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from minikernel.course import exercise as ex, grade_runner

ROOT = Path(__file__).resolve().parent.parent

# Run in a pytest that only collects: each collected test's file and exercise markers.
MARKERS_PLUGIN = '''import json, os


def pytest_collection_finish(session):
    found = {}
    for item in session.items:
        ids = [m.args[0] for m in item.iter_markers("exercise")]
        if ids:
            found.setdefault(str(item.path), set()).update(ids)
    with open(os.environ["MARKERS_OUT"], "w") as f:
        json.dump({path: sorted(ids) for path, ids in found.items()}, f)
'''


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_only_the_files_that_name_a_selected_exercise(tmp_path, monkeypatch):
    ch01, ch02 = tmp_path / "ch01", tmp_path / "ch02"
    marked = _write(ch01, "test_b.py", '@pytest.mark.exercise("1.2")\ndef test_x(): ...\n')
    param = _write(ch01, "test_a.py", "pytest.param(1, marks=pytest.mark.exercise('1.2'))\n")
    _write(ch01, "test_c.py", '@pytest.mark.exercise("1.25")\n@pytest.mark.exercise("11.2")\n')  # other IDs
    _write(ch01, "test_d.py", "def test_y(): ...\n")  # no exercise at all
    _write(ch01, "helpers.py", '"1.2"\n')  # not a test file
    _write(ch02, "test_e.py", '@pytest.mark.exercise("2.1")\n')
    later = _write(tmp_path / "ch10", "test_f.py", '@pytest.mark.exercise("1.2")\n')  # a later chapter's test of 1.2
    monkeypatch.setattr(grade_runner, "TESTS", tmp_path)
    assert grade_runner.test_paths(["1.2"]) == [str(param), str(marked), str(later)]
    # A chapter where no file names the exercise is collected whole: the verdict then
    # says that no test carries its marker, instead of pytest collecting nothing.
    assert grade_runner.test_paths(["1.3", "2.1"]) == [str(ch01), str(ch02 / "test_e.py")]


def test_a_missing_chapter_folder_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(grade_runner, "TESTS", tmp_path)
    with pytest.raises(FileNotFoundError, match="ch03"):
        grade_runner.test_paths(["3.1"])


def test_every_test_of_every_exercise_is_in_the_files_collected_for_it(tmp_path):
    """pytest itself says which file holds a test of which exercise (the markers as
    collected, however they were applied); the grader's files must include them all."""
    (tmp_path / "markers_plugin.py").write_text(MARKERS_PLUGIN)
    out = tmp_path / "markers.json"
    chapters = sorted(str(p) for p in (ROOT / "tests").glob("ch[0-9][0-9]") if p.is_dir())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "MARKERS_OUT": str(out)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-qq", "-p", "no:randomly",
                           "-p", "no:cacheprovider", "-p", "markers_plugin", *chapters],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    by_exercise: dict[str, set[str]] = defaultdict(set)
    for path, ids in json.loads(out.read_text()).items():
        for i in ids:
            by_exercise[i].add(path)
    assert set(by_exercise) == set(ex.registry()), "an exercise without tests, or a marker naming no exercise"
    for exercise_id, files in sorted(by_exercise.items()):
        assert files <= set(grade_runner.test_paths([exercise_id])), exercise_id
