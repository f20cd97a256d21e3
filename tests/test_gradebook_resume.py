"""Nothing lost: a gradebook stopped halfway (Ctrl-C, SIGKILL) and run again with the same
``--out`` ends with the same gradebook as a run never stopped, grading only what was
missing, and leaves nothing running. A submission that crashes the grader gets its row.
"""
from __future__ import annotations

import csv
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minikernel.course import edition
from tests.test_gradebook import _solve

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ["ann", "bob", "crashes"]

pytestmark = [pytest.mark.own_mode, pytest.mark.xdist_group("gradebook-resume")]  # its own: test_gradebook takes minutes


@functools.cache
def _class(base: Path) -> Path:
    tmp = base / "resume"
    edition.release(tmp / "edition")
    subs = tmp / "submissions"
    shutil.copytree(tmp / "edition", subs / "ann")  # untouched
    shutil.copytree(tmp / "edition", subs / "bob")
    _solve(subs / "bob", ["1.1"])
    shutil.copytree(tmp / "edition", subs / "crashes")  # the grader itself dies on importing it
    strides = subs / "crashes" / "minikernel" / "strides.py"
    strides.write_text(strides.read_text() + "\nimport os\nos._exit(3)\n")
    return subs


def _start(subs: Path, out: Path) -> subprocess.Popen:
    # Its temporary folders beside OUT: a gradebook killed with SIGKILL cannot remove them.
    (out.parent / "tmp").mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "minikernel", "gradebook", str(subs), "--out", str(out), "--exercises", "1.1",
           "--timeout", "30", "-j", "2"]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "TMPDIR": str(out.parent / "tmp")},
                            preexec_fn=_ctrl_c_as_in_a_terminal)


def _ctrl_c_as_in_a_terminal() -> None:
    """SIGINT back to its default in the gradebook: a shell without job control starts a
    command put in the background (``make test &``) with SIGINT ignored, every process
    below it inherits that, and Python then keeps it ignored, so Ctrl-C would not reach it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return err


def _rows(out: Path) -> list[dict]:
    with (out / "gradebook.csv").open() as f:
        return list(csv.DictReader(f))


@functools.cache
def _uninterrupted(base: Path) -> list[dict]:
    out = base / "resume" / "uninterrupted"
    _finish(_start(_class(base), out))
    return _rows(out)


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            alive.add(pid)
    return alive


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_interrupted_gradebook_resumes_to_the_same_gradebook(tmp_path_factory, tmp_path, how):
    base = tmp_path_factory.getbasetemp()
    expected = _uninterrupted(base)
    assert [r["student"] for r in expected] == STUDENTS
    assert "exited with 3" in {r["student"]: r for r in expected}["crashes"]["note"]
    out = tmp_path / "out"
    proc = _start(_class(base), out)
    deadline = time.monotonic() + 600
    started: set[int] = set()
    while proc.poll() is None and time.monotonic() < deadline:  # one graded, the next one grading
        started = _descendants(proc.pid) if list((out / "results").glob("*.json")) else set()
        if started:
            break
        time.sleep(0.1)
    assert started, "the gradebook ended before it could be stopped halfway"
    if how == "SIGINT":
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
    else:
        os.kill(proc.pid, signal.SIGKILL)  # the gradebook alone, at once: no clean-up of its own
    _, err = proc.communicate(timeout=120)
    kept = len(list((out / "results").glob("*.json")))
    assert 1 <= kept < len(STUDENTS), "the run was not stopped halfway"
    if how == "SIGINT":
        assert proc.returncode == 130 and f"interrupted: {kept} of {len(STUDENTS)} submissions graded" in err, err
    time.sleep(2)
    assert _alive(started) == set(), "grading processes outlived the stopped gradebook"
    err = _finish(_start(_class(base), out))
    assert f"resumed: {kept} of {len(STUDENTS)}" in err
    assert _rows(out) == expected
