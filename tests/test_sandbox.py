"""The grading sandbox (``minikernel.course.sandbox``) against hostile submissions.

Two submissions of chapter 01, solved with the references, each with hostile code
in some exercises (``tests/hostile/payloads.py``): reading the teacher's references
by absolute path, writing outside the grading tree, a fork bomb, filling the disk,
a 50 GB allocation, a daemon that outlives its exercise (double fork + setsid), a busy
loop in a signal handler. Each must FAIL with a message naming the limit, every other
exercise must be graded as usual, and nothing may be left running.

Hostile code runs only inside the sandbox: where bubblewrap cannot set it up, those
tests are skipped (saying why), and the tests of what the gradebook then says run.
"""
from __future__ import annotations

import functools
import os
import shutil
import uuid
from pathlib import Path

import pytest

from minikernel.course import edition, gradebook, sandbox
from minikernel.course.gradebook import Settings, run
from tests.test_gradebook import _solve

ROOT = Path(__file__).resolve().parent.parent
CHAPTER_1 = [f"1.{i}" for i in range(1, 8)]
TIMEOUT_S = 15
LIMITS = {"max_processes": 96, "disk_mb": 128, "memory_mb": 4096}

pytestmark = [pytest.mark.own_mode, pytest.mark.xdist_group("sandbox")]  # its own: test_gradebook takes minutes


def _limits() -> sandbox.Limits:
    return Settings(CHAPTER_1, **LIMITS).limits()


@functools.cache
def _plan() -> sandbox.Sandbox:
    return sandbox.plan(_limits(), [edition.ROOT])


def _processes(field: str) -> dict[int, str]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if field == "uid":
                    status = Path(f"/proc/{entry}/status").read_text()
                    found[int(entry)] = status.split("\nUid:")[1].split()[0]
                else:
                    found[int(entry)] = Path(f"/proc/{entry}/comm").read_text().strip()
            except (OSError, IndexError):
                continue
    return found


def _carries(pid: int, marker: bytes) -> bool:
    """Whether process ``pid`` was started by this test's grading: its environment holds
    ``marker`` (the gradebook passes the environment on). Other gradings may run as
    ``nobody`` at the same time (the gradebook tests on the other worker); where the
    environment cannot be read, the process counts as this test's."""
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes()
    except PermissionError:
        return True
    except OSError:
        return False  # ended meanwhile


@functools.cache
def _hostile_book(base: Path) -> dict:
    tmp = base / "hostile"
    tmp.mkdir()
    released = tmp / "edition"
    edition.release(released)
    token = uuid.uuid4().hex[:8]
    names = {"OUTSIDE_CANARY": str(tmp / "written-outside.txt"), "CANARY_NAME": f"minikernel-canary-{token}.txt",
             "DAEMON_NAME": f"mkdaemon{token}", "TEACHER_SOLUTIONS": str(ROOT / "solutions" / "strides.py")}
    payloads = (ROOT / "tests" / "hostile" / "payloads.py").read_text()
    for key, value in names.items():
        payloads = payloads.replace(key, value)
    subs = tmp / "submissions"
    for student, chosen in (("hostile_a", "HOSTILE_A"), ("hostile_b", "HOSTILE_B")):
        shutil.copytree(released, subs / student)
        _solve(subs / student, CHAPTER_1)
        strides = subs / student / "minikernel" / "strides.py"
        strides.write_text(strides.read_text() + "\n" + payloads.replace("CHOSEN.items()", f"{chosen}.items()"))
    nobody_before = {pid for pid, uid in _processes("uid").items() if uid == str(sandbox.NOBODY)}
    site_canary = Path(__import__("sysconfig").get_paths()["purelib"]) / names["CANARY_NAME"]
    marker = f"HOSTILE_GRADING_RUN={token}"
    os.environ["HOSTILE_GRADING_RUN"] = token
    try:
        results = run(subs, tmp / "out", Settings(CHAPTER_1, timeout_s=TIMEOUT_S, submission_timeout_s=600, **LIMITS),
                      jobs=2)
    finally:
        del os.environ["HOSTILE_GRADING_RUN"]
        written = [p for p in (Path(names["OUTSIDE_CANARY"]), site_canary) if p.exists()]
        for path in written:
            path.unlink()
    left = {pid: comm for pid, comm in _processes("comm").items() if comm == names["DAEMON_NAME"][:15]}
    nobody_after = {pid for pid, uid in _processes("uid").items()
                    if uid == str(sandbox.NOBODY) and _carries(pid, marker.encode())}
    return {"results": {r.student: r for r in results}, "written": written, "daemons_left": left,
            "nobody_left": nobody_after - nobody_before}


@pytest.fixture
def hostile(tmp_path_factory):
    box = _plan()
    if box.kind != "bubblewrap":
        pytest.skip("the grading sandbox cannot be set up here, so no hostile code is run: "
                    + "; ".join(box.warnings()))
    return _hostile_book(tmp_path_factory.getbasetemp())


def _verdict(book, student, exercise_id):
    verdict = book["results"][student].verdicts[exercise_id]
    return verdict["status"], verdict["detail"]


@pytest.mark.parametrize("student, exercise_id, says", [
    ("hostile_a", "1.3", "hides the course's checkout"),
    ("hostile_a", "1.4", "write only in its private /tmp"),
    ("hostile_a", "1.5", f"at most {LIMITS['max_processes']} processes"),
    ("hostile_a", "1.6", f"may write {LIMITS['disk_mb']} MB in all"),
    ("hostile_a", "1.7", f"limited to {LIMITS['memory_mb']} MB"),
    ("hostile_b", "1.1", "left a process running after its exercise ended"),
    ("hostile_b", "1.2", f"did not finish in {TIMEOUT_S} s"),
], ids=["reads-references", "writes-outside", "fork-bomb", "fills-disk", "allocates-50GB", "daemon",
        "busy-signal-handler"])
def test_hostile_exercise_fails_naming_the_limit(hostile, student, exercise_id, says):
    status, detail = _verdict(hostile, student, exercise_id)
    assert status == "FAIL" and says in detail, detail


@pytest.mark.parametrize("student, passing", [("hostile_a", ["1.1", "1.2"]),
                                              ("hostile_b", ["1.3", "1.4", "1.5", "1.6", "1.7"])])
def test_the_other_exercises_are_graded(hostile, student, passing):
    assert not hostile["results"][student].error
    assert {i: _verdict(hostile, student, i)[0] for i in passing} == {i: "PASS" for i in passing}


def test_nothing_written_outside_and_nothing_left_running(hostile):
    assert hostile["written"] == [], "a submission wrote outside its sandbox"
    assert hostile["daemons_left"] == {}, "the daemon outlived the grading"
    assert hostile["nobody_left"] == set(), "processes of the grading are still running"


def test_without_the_sandbox_the_gradebook_says_what_is_not_isolated(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "broken.zip").write_bytes(b"not a zip")  # nothing of it runs
    code = gradebook.main([str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--exercises", "1.1",
                           "--no-sandbox"])
    err = capsys.readouterr().err
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("warning: not isolated: ")]
    said = "\n".join(warnings)
    for what in ("file system (switched off (--no-sandbox)): the grading can read every file this user can "
                 "(the course's checkout with solutions/, other submissions, the home folder)",
                 "disk use: only each file is limited", "processes: their number is not limited",
                 "process containment:"):
        assert what in said, err
    box = _plan()
    if box.kind != "bubblewrap":  # this machine: the same warnings without being asked
        assert box.warnings() and all("switched off" not in w for w in box.warnings())


FAKE_GRADER = r'''
import ctypes, json, os, sys, time
run = os.path.join(os.environ["TMPDIR"], "minikernel-grade-fake")
os.makedirs(run)
stack = open(os.path.join(run, "1.1.stack"), "w")  # held open by exercise 1.1's processes, as the grader's are
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
        while True:
            time.sleep(0.1)
    os._exit(0)
os.wait()
stack.close()
open(os.path.join(run, "1.1.outcome"), "w").write("{}")
time.sleep(1.5)
rows = [{"id": i, "name": "x", "status": "PASS", "detail": ""} for i in ("1.1", "1.2")]
print(json.dumps({"exercises": rows, "passed": 2, "total": 2}))
'''


def test_launcher_kills_a_daemon_and_fails_its_exercise(tmp_path):
    """The launcher alone (no bubblewrap needed): a process that left its exercise's session."""
    import json
    import subprocess
    import sys

    marker = f"mkfake{uuid.uuid4().hex[:8]}"
    (tmp_path / "grader.py").write_text(FAKE_GRADER)
    proc = subprocess.run([sys.executable, "-I", str(sandbox.LAUNCHER), "--nofile", "256", "--",
                           sys.executable, str(tmp_path / "grader.py"), marker],
                          env={**os.environ, "TMPDIR": str(tmp_path)}, capture_output=True, text=True, timeout=60)
    report = json.loads(proc.stdout)
    rows = {r["id"]: r for r in report["exercises"]}
    assert rows["1.1"]["status"] == "FAIL" and "left a process running" in rows["1.1"]["detail"], proc.stderr
    assert rows["1.2"]["status"] == "PASS" and report["passed"] == 1
    assert marker not in _processes("comm").values(), "the daemon is still running"


NOT_ISOLATED = ("file system (", "the course's checkout with solutions/, other submissions, the home folder",
                "disk use: only each file is limited", "processes: their number is not limited",
                "process containment:")


@pytest.mark.parametrize("bwrap", ["missing", "fails"])
def test_where_bubblewrap_cannot_run_the_plan_says_what_is_not_isolated(tmp_path, monkeypatch, bwrap):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    real_which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which",
                        lambda name: (None if bwrap == "missing" else str(fake)) if name == "bwrap" else real_which(name))
    box = sandbox.plan(_limits(), [edition.ROOT])
    said = "\n".join(box.warnings())
    assert box.kind == "none"
    assert ("bubblewrap is not installed" if bwrap == "missing" else "No permissions to create new namespace") in said
    assert all(what in said for what in NOT_ISOLATED), said


VIEW = r'''
import json, os, socket, sys, sysconfig
seen = {"uid": os.getuid()}
for name, path in (("solutions", sys.argv[1]), ("home", os.path.expanduser("~root"))):
    try:
        seen[name] = sorted(os.listdir(path))[:3] if os.path.isdir(path) else open(path).read()[:20]
    except OSError as err:
        seen[name] = type(err).__name__
for name, path in (("venv", sysconfig.get_paths()["purelib"]), ("tree", os.getcwd()), ("tmp", "/tmp")):
    try:
        open(os.path.join(path, "minikernel-sandbox-probe"), "w").close()
        seen[name] = "written"
    except OSError as err:
        seen[name] = err.strerror
try:
    socket.create_connection(("192.0.2.1", 80), timeout=3)
    seen["network"] = "connected"
except OSError as err:
    seen["network"] = err.strerror or type(err).__name__
print(json.dumps(seen))
'''


def test_what_the_grading_sees(tmp_path):
    """The sandbox alone (seconds): the checkout hidden, read-only but for /tmp, no network."""
    import json
    import subprocess
    import sys

    box = _plan()
    if box.kind != "bubblewrap":
        pytest.skip("the grading sandbox cannot be set up here: " + "; ".join(box.warnings()))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "view.py").write_text(VIEW)
    cmd = box.wrap([sys.executable, "view.py", str(ROOT / "solutions" / "strides.py")], tree)
    proc = subprocess.run(cmd, cwd=tree, env={**os.environ, **box.env(tree)}, capture_output=True, text=True,
                          timeout=120)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    python_only = {p.relative_to("/root").parts[0] for p in sandbox._needed() if Path("/root") in p.parents}
    assert seen["solutions"] == "FileNotFoundError", seen
    assert seen["home"] == "FileNotFoundError" or set(seen["home"]) <= python_only, seen  # only Python shown again
    assert seen["venv"] == "Read-only file system" and seen["tree"] in ("Read-only file system", "Permission denied")
    assert seen["tmp"] == "written" and seen["network"] == "Network is unreachable", seen
    if os.geteuid() == 0:
        assert seen["uid"] == sandbox.NOBODY
    assert not (tree / "minikernel-sandbox-probe").exists()
