"""Grade corpus cases in forked copies of one process that has imported torch and pytest.

``python -m tests.wrong.zygote`` reads one JSON request per line on stdin,
``{"case": PATH, "exercise": "N.M", "env": {...}}``, and prints one JSON line per
finished case: ``{"case", "exit", "stdout", "stderr", "seconds", "hung"}``.

Each case runs ``python -m minikernel grade N.M --json`` exactly as a new interpreter
would, with the case's environment (``MINIKERNEL_OVERRIDE`` ...), but in a child forked
from this process: torch, numpy, pytest and hypothesis are imported once here instead
of once per case (two seconds of a four-second case). Nothing of minikernel is
imported here: the exercise marker reads ``MINIKERNEL_SOLUTIONS`` and
``MINIKERNEL_OVERRIDE`` when minikernel is imported, which each child does itself after
setting them. numba (another second of every case, now that autograd runs the
kernels) is imported here only when every child would choose numba's CUDA simulator
anyway (``_preimport_numba``): ``minikernel.device`` decides ``NUMBA_ENABLE_CUDASIM``
before numba reads it, and a parent that had asked the CUDA driver would leave its
forked children without CUDA.

Cases run ``--workers`` at a time; a case still running after ``--limit`` seconds is
killed with every process it started and reported with ``hung: true``.
"""
from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import os
import runpy
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import hypothesis  # noqa: F401  (imported for the children)
import numpy  # noqa: F401
import pytest  # noqa: F401
import torch  # noqa: F401
import torch.distributed.tensor  # noqa: F401  (the grader's plugin imports these two)
import torch.fx.experimental.symbolic_shapes  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def _preimport_numba() -> None:
    """Import numba for the children when they will all run the CUDA simulator: the variable
    says so, or no CUDA driver library exists at all (decided without calling the driver)."""
    explicit = os.environ.get("NUMBA_ENABLE_CUDASIM", "").strip()
    if explicit and explicit != "1":
        return
    if not explicit:
        for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
            try:
                ctypes.CDLL(name)
            except OSError:
                continue
            return  # a driver: each child asks it, as minikernel.device does
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    importlib.import_module("numba")
    importlib.import_module("numba.cuda")
    # numba's compiler registries, which the first kernel compiled or read from the cache loads
    importlib.import_module("numba.core.registry").cpu_target.target_context.refresh()


def _child(request: dict, out: Path, err: Path) -> None:
    """In the forked child: ``python -m minikernel grade ...`` with the case's environment."""
    code = 70
    try:
        os.setpgid(0, 0)
        os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
        os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.environ.update(request["env"])
        sys.argv = ["minikernel", "grade", request["exercise"], *request.get("args", [])]
        runpy.run_module("minikernel", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    except BaseException:  # noqa: BLE001 (report anything; never return into the parent's loop)
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (Linux ``/proc``), whatever session it moved to."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += parents.get(p, [])
    return found


def _kill_tree(pid: int) -> None:
    for p in _descendants(pid):
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def serve(requests: list[dict], workers: int, limit_s: float) -> None:
    todo = list(enumerate(requests))
    running: dict[int, tuple[dict, Path, Path, float]] = {}
    with tempfile.TemporaryDirectory(prefix="minikernel-corpus-") as tmp:
        while todo or running:
            while todo and len(running) < workers:
                n, request = todo.pop(0)
                out, err = Path(tmp) / f"{n}.out", Path(tmp) / f"{n}.err"
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    _child(request, out, err)
                running[pid] = (request, out, err, time.monotonic())
            time.sleep(0.02)
            for pid, (request, out, err, started) in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                hung = not done and time.monotonic() - started > limit_s
                if hung:
                    _kill_tree(pid)
                    status = os.waitpid(pid, 0)[1]
                elif not done:
                    continue
                del running[pid]
                print(json.dumps({"case": request["case"], "exit": os.waitstatus_to_exitcode(status),
                                  "stdout": out.read_text(errors="replace"),
                                  "stderr": err.read_text(errors="replace")[-4000:],
                                  "seconds": time.monotonic() - started, "hung": hung}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=float, default=600.0)
    options = parser.parse_args()
    os.chdir(ROOT)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    _preimport_numba()
    serve([json.loads(line) for line in sys.stdin if line.strip()], options.workers, options.limit)


if __name__ == "__main__":
    main()
