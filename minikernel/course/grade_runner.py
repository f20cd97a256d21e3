"""Start the grading pytest in a session of its own, bound its time, and leave
nothing running; then turn what each exercise's process left behind into results.

The pytest process collects once and forks one child per exercise
(``grade_plugin``, ``grade_pool``). This module is the outermost guard: it kills
the pytest process if collection itself never ends (an endless loop at the top
level of a learner's module), and afterwards kills every process still in its
session, whatever it was.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import openmp_policy
from . import grade_server
from .grade_detail import learner_frame_from_dump
from .grade_pool import MAX_FILE_BYTES, freeze_heap
from .grade_server import kill_session, run_pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: pytest plugins the grader never uses; not loading them saves about a second (nbval
#: alone imports nbformat and jsonschema).
_UNUSED_PLUGINS = [arg for name in ("nbval", "anyio", "xdist", "xdist.looponfail") for arg in ("-p", f"no:{name}")]
_SIGNAL_WORDS = {
    "SIGSEGV": "a segmentation fault: memory read or written out of bounds",
    "SIGBUS": "a bus error: memory read out of bounds",
    "SIGABRT": "aborted, e.g. by a failed check inside a C library",
    "SIGFPE": "an arithmetic error in compiled code",
    "SIGKILL": "killed from outside, e.g. for using too much memory",
    "SIGILL": "an illegal instruction in compiled code",
}


@dataclass
class ExerciseRun:
    """What one exercise's process left: its test results, or how it ended without them."""

    results: list[dict] | None = None  # None: the process ended before writing them
    outcome: dict = field(default_factory=dict)  # exit, signal, timed_out, seconds
    running: dict = field(default_factory=dict)  # the test it had started last
    stack: str = ""  # faulthandler's dump (timeout or crash)


@dataclass
class Session:
    runs: dict[str, ExerciseRun]
    collect_errors: list[str]
    error: str = ""


def _names_an_exercise(text: str, ids: set[str]) -> bool:
    """Whether ``text`` spells one of ``ids`` as a string literal (``"1.2"`` or ``'1.2'``)."""
    return any(f'"{i}"' in text or f"'{i}'" in text for i in ids)


def test_paths(ids: list[str]) -> list[str]:
    """The test files the grader collects for ``ids``: the ``test_*.py`` files of the
    chapter folders (``tests/chNN``) that spell one of the IDs as a string literal, as
    every ``exercise`` marker does (``@pytest.mark.exercise("1.2")``, a parameter's
    ``marks=``, a helper's default), in the order pytest would collect the folders.

    A later chapter's file may test an earlier exercise (chapter 09's routed ops test
    the engine, 3.3): it is collected too. The other files hold no test of these
    exercises; collecting them would only cost time. An exercise that no file names
    gets its chapter's folder collected whole (its verdict then says that no test
    carries its marker)."""
    chapters = sorted({int(i.split(".")[0]) for i in ids})
    own = [TESTS / f"ch{c:02d}" for c in chapters]
    missing = [p for p in own if not p.is_dir()]
    if missing:
        raise FileNotFoundError(f"the exercise tests are missing: {', '.join(map(str, missing))}. "
                                "The grader needs the course's tests/ folder next to minikernel/.")
    files = {f: f.read_text(errors="replace") for f in sorted(TESTS.glob("ch[0-9][0-9]/test_*.py"))}
    paths = [f for f, text in files.items() if _names_an_exercise(text, set(ids))]
    unnamed = [i for i in ids if not any(_names_an_exercise(files[f], {i}) for f in paths)]
    folders = sorted({TESTS / f"ch{int(i.split('.')[0]):02d}" for i in unnamed})
    paths = [f for f in paths if f.parent not in folders] + folders
    return [str(p) for p in sorted(paths)]


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _last_line(path: Path) -> dict:
    try:
        lines = path.read_text().strip().splitlines()
    except OSError:
        return {}
    try:
        return json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}


class _Forked:
    """pytest run in a forked copy of this process, as the leader of a new session.

    The grader's command line has imported torch, numba and minikernel already
    (``python -m minikernel`` imports the package); the copy starts with them, so
    grading does not pay for a second interpreter's start-up."""

    def __init__(self, args: list[str], env: dict[str, str], log) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        freeze_heap()
        self.pid = os.fork()
        self.returncode: int | None = None
        if self.pid == 0:
            # As `python -m pytest ARGS` would, without importing pytest into every
            # `import minikernel` (the front door re-exports grade) for this one use.
            run_pytest(args, env, log.fileno())

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode


def _served(args: list[str], env: dict[str, str], log: Path, limit_s: float) -> grade_server.Served | None:
    """The grading session run by the warm server (``grade_server``), started if none runs;
    None when it is off or out of reach."""
    if not grade_server.enabled(dict(os.environ)):
        return None
    try:
        sock = grade_server.connect(dict(os.environ))
        return grade_server.Served(sock, args, {**os.environ, **env}, log, limit_s) if sock is not None else None
    except (OSError, ValueError, KeyError):
        return None


def run_session(ids: list[str], *, timeout_s: float, jobs: int, fork: bool = False) -> Session:
    """Grade ``ids`` in one pytest session, each exercise in its own process group.

    ``fork``: run pytest in a forked copy of this process (the command line, which
    has just imported minikernel). Otherwise (a notebook, whose imports may be older
    than the learner's last edit) the warm grading server (``grade_server``) runs it,
    or, when the server is off or out of reach, a new interpreter. The command line
    never uses a server: what it reports comes from processes it started itself (the
    gradebook's sandbox grades with it)."""
    paths = test_paths(ids)
    with tempfile.TemporaryDirectory(prefix="minikernel-grade-") as tmp:
        out = Path(tmp)
        args = [*paths, "-qq", "--no-header", "-p", "no:cacheprovider", "-p", "no:timeout", "-p", "no:randomly",
                *_UNUSED_PLUGINS, "-p", "minikernel.course.grade_plugin", f"--mk-ids={','.join(ids)}",
                f"--mk-out={out}", f"--mk-timeout={timeout_s}", f"--mk-jobs={jobs}"]
        # PYTORCH_NVML_BASED_CUDA_CHECK: torch.cuda.is_available() asks NVML instead of
        # initializing CUDA, which would leave the exercises' forked children unable to use it.
        env = {"MINIKERNEL_GRADING": "1", "HYPOTHESIS_PROFILE": "grade", "PYTHONUNBUFFERED": "1",
               "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
        # OpenMP's idle threads sleep (``openmp_policy``): read by a new interpreter's torch
        # (the pytest run without the server, the processes a test starts); a forked copy
        # keeps the policy its parent's torch was loaded with.
        if openmp_policy.VARIABLE not in os.environ:  # a value the user chose stays
            env[openmp_policy.VARIABLE] = openmp_policy.PASSIVE
        collect_limit = max(60.0, timeout_s)
        # Each round of `jobs` exercises may take the whole limit; a little more for the
        # last kills. The pytest process enforces the real per-exercise limit itself.
        run_limit = timeout_s * (math.ceil(len(ids) / max(jobs, 1)) + 1) + 30
        error = ""
        with open(out / "pytest.log", "w") as log:
            if fork:
                proc = _Forked(args, env, log)
            else:
                proc = _served(args, env, out / "pytest.log", collect_limit + run_limit + 30)
            if proc is None:
                proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=ROOT, env={**os.environ, **env},
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            try:
                started = time.monotonic()
                collected_at = None
                while proc.poll() is None:
                    now = time.monotonic()
                    if collected_at is None and (out / "collected").exists():
                        collected_at = now
                    if collected_at is None and now - started > collect_limit:
                        error = (f"loading the tests did not finish in {collect_limit:g} s (an endless loop at the "
                                 "top level of a module, outside any function?)")
                        break
                    if collected_at is not None and now - collected_at > run_limit:
                        error = f"grading did not finish in {run_limit:g} s"
                        break
                    time.sleep(0.02)
            finally:
                # The server has reaped a session that ended (and killed what it left): its
                # ID may be another process's by now.
                if not isinstance(proc, grade_server.Served) or proc.returncode is None:
                    kill_session(proc.pid)
                proc.wait()
        if not (out / "collected").exists() and not error:
            tail = "\n".join((out / "pytest.log").read_text(errors="replace").strip().splitlines()[-15:])
            error = f"pytest exited with {proc.returncode} before running any test:\n{tail}"
        runs = {}
        for i in ids:
            data = _read_json(out / f"{i}.json")
            runs[i] = ExerciseRun(results=data["results"] if data else None,
                                  outcome=_read_json(out / f"{i}.outcome") or {},
                                  running=_last_line(out / f"{i}.progress"),
                                  stack=_safe_read(out / f"{i}.stack"))
        errors_file = out / "collect_errors.txt"
        collect_errors = errors_file.read_text().splitlines() if errors_file.exists() else []
    return Session(runs, collect_errors, error)


def _safe_read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[:20000]
    except OSError:
        return ""


def ended_badly(run: ExerciseRun, timeout_s: float) -> tuple[str, dict] | None:
    """The FAIL detail of an exercise whose process hung or died, else None."""
    if run.results is not None:
        return None
    test = run.running.get("words") or ""
    while_running = f" while running: {test}" if test else " before its first test"
    where = learner_frame_from_dump(run.stack)
    outcome = run.outcome
    if not outcome:
        return "not graded: the grading run stopped before this exercise (see the error below)", {"error": "not graded"}
    if outcome.get("timed_out"):
        text = f"did not finish in {timeout_s:g} s (an endless loop?){while_running}"
    elif outcome.get("signal") == "SIGXFSZ":
        text = f"stopped after writing {MAX_FILE_BYTES >> 20} MB of output (printing in a loop?){while_running}"
    elif outcome.get("signal"):
        name = outcome["signal"]
        text = f"crashed with {name} ({_SIGNAL_WORDS.get(name, 'a fatal signal')}){while_running}"
    else:
        text = (f"the process exited with status {outcome.get('exit')} (os._exit() or exit() outside a test?)"
                f"{while_running}")
    fields = {"test": test, "error": text, "where": where, "input": [], "expected": "", "got": ""}
    return text + (f"\nyour code: {where}" if where else ""), fields
