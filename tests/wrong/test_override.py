"""MINIKERNEL_OVERRIDE: a file's functions replace an exercise's bodies, or a clear error."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.own_mode  # every test sets the mode of the interpreter it starts

CHECK = ("import minikernel, minikernel.strides as s, minikernel.course.exercise as e; "
         "x = e.registry()['1.2']; print(s.index_to_position((1, 2), (3, 1), 4), x.overridden, "
         "x.active['index_to_position'].__module__)")


def _run(tmp_path: Path, text: str, solutions: str = "all") -> subprocess.CompletedProcess:
    case = tmp_path / "case.py"
    case.write_text(text)
    env = dict(os.environ, MINIKERNEL_SOLUTIONS=solutions, MINIKERNEL_OVERRIDE=str(case), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, cwd=ROOT,
                          check=False)


def test_override_replaces_the_body_in_either_mode(tmp_path):
    body = ('EXERCISE = "1.2"\n\n\ndef index_to_position(index, strides, offset=0):\n'
            '    return 1000 + offset\n')
    for solutions in ("all", ""):
        proc = _run(tmp_path, body, solutions)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["1004", "True", "minikernel_override_1_2"]


def test_unknown_exercise_is_refused(tmp_path):
    proc = _run(tmp_path, 'EXERCISE = "1.99"\n\n\ndef f():\n    pass\n')
    assert proc.returncode != 0
    assert "EXERCISE = '1.99', which is no exercise" in proc.stderr


def test_file_without_the_exercise_function_is_refused(tmp_path):
    proc = _run(tmp_path, 'EXERCISE = "1.2"\n\n\ndef index_to_positon(index, strides, offset=0):\n    return 0\n')
    assert proc.returncode != 0
    assert "defines none of exercise 1.2's functions; define index_to_position()" in proc.stderr


def test_wrong_signature_and_missing_declaration_are_refused(tmp_path):
    proc = _run(tmp_path, 'EXERCISE = "1.2"\n\n\ndef index_to_position(index, strides):\n    return 0\n')
    assert proc.returncode != 0 and "does not match the stub's signature" in proc.stderr
    proc = _run(tmp_path, 'def index_to_position(index, strides, offset=0):\n    return 0\n')
    assert proc.returncode != 0 and 'EXERCISE = "2.5"' in proc.stderr


def test_several_files_separated_by_semicolons(tmp_path):
    (tmp_path / "a.py").write_text('EXERCISE = "1.2"\n\n\ndef index_to_position(index, strides, offset=0):\n'
                                   '    return -1\n')
    (tmp_path / "b.py").write_text('EXERCISE = "1.3"\n\n\ndef to_index(ordinal, shape):\n    return (7,)\n')
    env = dict(os.environ, MINIKERNEL_SOLUTIONS="all", PYTHONPATH=str(ROOT),
               MINIKERNEL_OVERRIDE=f"{tmp_path / 'a.py'};{tmp_path / 'b.py'}")
    code = "import minikernel.strides as s; print(s.index_to_position((1,), (1,)), s.to_index(0, (2,)))"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["-1", "(7,)"]
