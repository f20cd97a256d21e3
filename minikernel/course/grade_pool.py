"""Run each exercise in its own forked process group, a few at once, each under a
wall-clock limit.

The parent (pytest, with every test already collected) forks one child per
exercise. The child makes itself the leader of a new process group, so that the
processes it starts (chapter 07's ranks) are in that group too, and runs its tests.
The parent never runs the learner's code: it only waits, so it can always act.

* **Limit.** When a child has run ``timeout_s`` seconds, the parent asks it for a
  stack dump (``faulthandler`` on SIGUSR1, which works while compiled numba code
  runs, where Python's own alarm cannot interrupt), then sends SIGTERM and, a moment
  later, SIGKILL to the whole group.
* **Crash.** A child that dies without writing its results (a segfault, ``os._exit``,
  too much output) fails its exercise only; ``faulthandler`` has written where.
* **Nothing survives.** When a child ends, by itself or not, what is left in its
  group (a rank still running) is killed before the child is reaped (a zombie keeps
  its group ID reserved, so the kill cannot reach a stranger).

One line of JSON per exercise goes to ``<out>/<id>.outcome``.
"""
from __future__ import annotations

import faulthandler
import gc
import importlib
import json
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

#: Most a child may write to any one file (the captured output of a test included);
#: past it the kernel stops it with SIGXFSZ instead of filling the disk.
MAX_FILE_BYTES = 64 * 2**20
_POLL_S = 0.02
_TERM_GRACE_S = 1.0


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty


def freeze_heap() -> None:
    """Move every object alive now out of the garbage collector's sight (``gc.freeze``).

    Call it just before ``os.fork``. torch, numba and the collected tests are hundreds of
    thousands of objects; without it each full collection in a child walks them all
    (about 0.2 s here, and pytest runs one as it ends), and touching their headers
    copies the parent's memory pages into the child. No collection first: it would
    cost that walk once per call; what garbage is frozen stays until the process ends."""
    gc.freeze()


#: What torch imports the first time some of its functions run: sympy (through torch.fx)
#: for ``torch.broadcast_shapes`` and autograd's ``grad``, ``torch.distributed.tensor``
#: for ``torch.testing.assert_close``, ``torch._dynamo`` for every ``torch.optim``
#: optimizer's constructor and DDP's (about 2 s together).
TORCH_LATE_IMPORTS = ("torch._dynamo", "torch.distributed.tensor", "torch.fx.experimental.symbolic_shapes")


def warm_up() -> None:
    """Do once, in the parent, what each exercise's process would otherwise do for itself:
    import what torch imports late (``TORCH_LATE_IMPORTS``), and load numba's compiler
    registries (the first kernel a process compiles or reads from numba's cache imports
    and registers numba's typing and lowering modules, about 0.3 s).

    Worth it when several exercises are graded; for one, its process pays only for what
    its tests use. Call it before forking; it starts no thread."""
    for name in TORCH_LATE_IMPORTS:
        importlib.import_module(name)
    # Only when the tests imported numba: minikernel.device sets numba's variables (the
    # CUDA simulator or not) before numba's first import, so this must not be that import.
    if "numba" in sys.modules:
        importlib.import_module("numba.core.registry").cpu_target.target_context.refresh()


def _start(exercise_id: str, items: list, run_one: Callable[[str, list], None], out: Path) -> int:
    # Written before the fork so a child stopped at once still has its file.
    stack = open(out / f"{exercise_id}.stack", "w")  # noqa: SIM115 (kept open for faulthandler)
    sys.stdout.flush()
    sys.stderr.flush()
    freeze_heap()
    pid = os.fork()
    if pid:
        stack.close()
        try:
            os.setpgid(pid, pid)  # also done in the child: whichever runs first wins the race
        except (PermissionError, ProcessLookupError):
            pass
        return pid
    code = 0
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        faulthandler.enable(file=stack, all_threads=True)
        faulthandler.register(signal.SIGUSR1, file=stack, all_threads=True)
        resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
        run_one(exercise_id, items)
    except BaseException:  # noqa: BLE001 (anything at all: report it, never return into the parent's loop)
        traceback.print_exc(file=stack)
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)  # never run the parent's code (pytest's session end) in the child


def _exit_info(status: int) -> dict:
    if os.WIFSIGNALED(status):
        return {"exit": None, "signal": signal.Signals(os.WTERMSIG(status)).name}
    return {"exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None, "signal": None}


def _write_outcome(out: Path, exercise_id: str, info: dict) -> None:
    (out / f"{exercise_id}.outcome").write_text(json.dumps(info))


def _stop(pid: int) -> int:
    """Dump the child's stacks, then end its whole group; returns its wait status."""
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        pass
    time.sleep(0.2)  # the dump is written from a signal handler, at once
    _kill_group(pid, signal.SIGTERM)
    end = time.monotonic() + _TERM_GRACE_S
    while time.monotonic() < end:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break
        time.sleep(_POLL_S)
    _kill_group(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def run_all(groups: dict[str, list], run_one: Callable[[str, list], None], *, out: Path,
            timeout_s: float, jobs: int, warm: Callable[[], None] | None = None) -> None:
    """Run ``run_one(id, items)`` for every exercise in a child of its own, ``jobs`` at once.

    ``warm`` (e.g. :func:`warm_up`) is called once the first exercise's process has
    started and before any other starts: the first exercise runs on another core while
    this process imports what the later ones will inherit (the first imports for itself
    what it needs). So the first exercise should be a long one."""
    pending = list(groups)
    running: dict[int, tuple[str, float]] = {}
    try:
        while pending or running:
            while pending and len(running) < max(jobs, 1):
                exercise_id = pending.pop(0)
                try:
                    running[_start(exercise_id, groups[exercise_id], run_one, out)] = (exercise_id, time.monotonic())
                except BlockingIOError:  # the process limit is reached (a fork bomb in a running exercise)
                    pending.insert(0, exercise_id)
                    if not running:
                        raise
                    break  # start it once a running exercise has ended and its processes are killed
                if warm is not None:
                    warm, then = None, warm
                    then()
            for pid, (exercise_id, started) in list(running.items()):
                seconds = time.monotonic() - started
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    _kill_group(pid, signal.SIGKILL)  # what it left behind goes with it
                    info = _exit_info(os.waitpid(pid, 0)[1]) | {"timed_out": False}
                elif seconds > timeout_s:
                    info = _exit_info(_stop(pid)) | {"timed_out": True}
                else:
                    continue
                del running[pid]
                seconds = time.monotonic() - started  # the kill included
                _write_outcome(out, exercise_id, info | {"seconds": round(seconds, 2)})
            time.sleep(_POLL_S)
    finally:  # interrupted (Ctrl-C, an error here): leave nothing running
        for pid in running:
            _kill_group(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
