"""The notebooks' warm grading process: torch, numba, pytest and hypothesis are
imported once, and every grade still reads the learner's files anew from disk.

``minikernel.grade("1.*")`` in a notebook must not grade the modules its kernel
imported (they may be older than the learner's last edit), so it cannot fork
itself; a new interpreter pays seconds of imports each time. This server sits in
between. It imports the libraries the tests use, and nothing from the course
folder. Each grade is a request on a Unix socket: the server forks a copy of
itself, the *session*, which takes the notebook's environment
(``MINIKERNEL_SOLUTIONS`` included), imports minikernel and the tests from disk,
and runs the grading pytest (``grade_plugin``), which forks one process group per
exercise as always. The session is the leader of a new session, so the notebook's
grader bounds and kills it exactly as it would a fresh interpreter; when it ends,
the server kills what is left in it before reaping it.

The first ``grade()`` starts the server (``connect``); it serves several gradings at
once (two notebooks), on a socket in a folder only its user can open, and exits
after ``IDLE_S`` seconds without one. Its name depends on the course folder, the Python and
the environment variables torch and numba read when imported, so a notebook with
different ones gets a server of its own. ``MINIKERNEL_GRADE_SERVER=0`` switches it
off (each grade then starts a new interpreter).

Run as a plain script (``python -P minikernel/course/grade_server.py SOCKET``):
importing it as part of the package would import the learner's files into the server.
"""
from __future__ import annotations

import contextlib
import fcntl
import gc
import hashlib
import importlib
import importlib.metadata
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IDLE_S = 600.0
#: Seconds a new server may take to import everything and answer (a busy machine).
START_S = 120.0
SWITCH = "MINIKERNEL_GRADE_SERVER"
#: Read when torch or numba is imported: a server imported with other values cannot serve.
_KEY_VARS = ("NUMBA_", "OMP_", "MKL_", "KMP_", "PYTORCH_", "TORCH_", "CUDA_", "PYTHON", "LD_")
#: Imported once, by the server. numba only when NUMBA_ENABLE_CUDASIM is set, as
#: ``minikernel.device`` must choose the simulator before numba is first imported.
PRELOAD = ("numpy", "torch", "torch.distributed.tensor", "torch.fx.experimental.symbolic_shapes", "torch.testing",
           "pytest", "_pytest.python", "_pytest.fixtures", "_pytest.assertion.rewrite", "hypothesis",
           "hypothesis.strategies", "hypothesis.extra.numpy", "_hypothesis_pytestplugin", "pluggy")
NUMBA_PRELOAD = ("numba", "numba.core.registry", "numba.np.ufunc.parallel", "numba.cuda")
#: Set for the server unless the notebook sets it: OpenMP's idle threads (torch's and
#: numba's parallel loops) sleep instead of spinning. The exercises are graded several at
#: once, one per core, and a spinning thread takes a core from another exercise's process
#: (references on, chapter 02 from the command line with it set: about 25% less CPU).
#: It is read when torch loads OpenMP, so only a server started with it gets it.
SERVER_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


# --- both sides ------------------------------------------------------------------
def session_pids(sid: int) -> list[int]:
    """Processes in session ``sid`` (Linux ``/proc``; empty elsewhere)."""
    pids = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    pids.append(int(entry))
            except (ProcessLookupError, PermissionError):
                continue
    return pids


def kill_session(sid: int) -> None:
    """SIGKILL every process left in the grading session (a rank, a grandchild)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, signal.SIGKILL)
    for pid in session_pids(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def run_pytest(args: list[str], env: dict[str, str], log_fd: int, *, whole_env: bool = False) -> None:
    """In a freshly forked child: become a session leader and run ``python -m pytest ARGS``
    in the course folder; never returns. ``whole_env``: ``env`` replaces the environment."""
    code = 70
    try:
        os.setsid()
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        if whole_env:
            os.environ.clear()
        os.environ.update(env)
        os.chdir(ROOT)
        sys.path.insert(0, str(ROOT))  # as `python -m pytest` in the course folder: its minikernel first
        sys.argv = ["pytest", *args]
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as done:  # how pytest's __main__ ends
        code = done.code if isinstance(done.code, int) else 1
    except BaseException:  # noqa: BLE001 (report anything, never return into the caller's code)
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


# --- the notebook's side ---------------------------------------------------------
def enabled(env: dict[str, str]) -> bool:
    return env.get(SWITCH, "1").strip() not in ("0", "") and hasattr(socket, "AF_UNIX") and hasattr(os, "fork")


def socket_path(env: dict[str, str]) -> Path:
    """Where the server for this course folder, Python and environment listens."""
    key = [str(ROOT), sys.executable, str(Path(__file__).stat().st_mtime_ns)]
    key += sorted(f"{k}={v}" for k, v in env.items() if k.startswith(_KEY_VARS))
    digest = hashlib.sha256("\0".join(key).encode()).hexdigest()[:16]
    base = Path(env.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"minikernel-grade-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    info = base.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{base} must belong to you and be closed to others")
    return base / f"{digest}.sock"


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def connect(env: dict[str, str]) -> socket.socket | None:
    """A connection to the server, started first if none runs; None if it cannot be had."""
    path = socket_path(env)
    sock = _connect(path)
    if sock is not None:
        return sock
    with open(path.with_suffix(".log"), "w") as log:
        server = subprocess.Popen([sys.executable, "-P", __file__, str(path)], env={**SERVER_ENV, **env}, cwd=ROOT,
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    end = time.monotonic() + START_S
    while time.monotonic() < end:
        sock = _connect(path)
        if sock is not None:
            return sock
        if server.poll() is not None and not path.exists():  # it failed, or lost the race to another
            sock = _connect(path)
            return sock
        time.sleep(0.05)
    return None


class Served:
    """A grading session run by the server; ``pid`` leads its own session. Polled like a Popen."""

    def __init__(self, sock: socket.socket, args: list[str], env: dict[str, str], log: Path, limit_s: float) -> None:
        self.sock, self.returncode, self._buffer = sock, None, b""
        request = {"args": args, "env": env, "log": str(log), "limit_s": limit_s}
        sock.sendall(json.dumps(request).encode() + b"\n")
        sock.settimeout(START_S)
        self.pid = int(self._message()["pid"])

    def _message(self) -> dict:
        while b"\n" not in self._buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the grading server closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _finish(self, timeout: float | None) -> int | None:
        self.sock.settimeout(timeout)
        try:
            self.returncode = int(self._message()["exit"])
        except (TimeoutError, BlockingIOError):
            return None
        except (OSError, ValueError, KeyError):
            self.returncode = -1  # the server went away: what the exercises wrote still counts
        self.sock.close()
        return self.returncode

    def poll(self) -> int | None:
        return self.returncode if self.returncode is not None else self._finish(0.0)

    def wait(self) -> int:
        if self.returncode is None:
            self._finish(30.0)
        return self.returncode if self.returncode is not None else -1


# --- the server's side -----------------------------------------------------------
def preload(env: dict[str, str]) -> None:
    names = PRELOAD + (NUMBA_PRELOAD if env.get("NUMBA_ENABLE_CUDASIM", "").strip() else ())
    for name in names:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    with contextlib.suppress(Exception):  # the pytest plugins installed beside pytest
        for entry in importlib.metadata.entry_points(group="pytest11"):
            with contextlib.suppress(Exception):
                importlib.import_module(entry.value.split(":")[0])
    if "numba" in sys.modules:  # numba's typing and lowering registries, as grade_pool.warm_up
        with contextlib.suppress(Exception):
            sys.modules["numba.core.registry"].cpu_target.target_context.refresh()
    # hypothesis gathers the constants of the "local" modules (the course's) from every
    # module loaded, once per process, at collection: about 0.7 s, nearly all spent
    # finding that torch's modules are not local. Done here, each session looks only at
    # the modules it imported itself; what it finds is the same.
    with contextlib.suppress(Exception), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        importlib.import_module("hypothesis.internal.conjecture.providers")._get_local_constants()


class _Sessions:
    """The gradings under way, each a forked session answering one connection."""

    def __init__(self, listener: socket.socket) -> None:
        self.listener = listener
        self.running: dict[int, tuple[socket.socket, float]] = {}  # pid -> (connection, kill time)

    def start(self, conn: socket.socket) -> None:
        conn.settimeout(10.0)
        request = json.loads(conn.makefile("rb").readline())
        log_fd = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()  # see grade_pool.freeze_heap
        pid = os.fork()
        if pid == 0:  # nothing of the server's, nor of the other gradings', stays open in it
            for other in [self.listener, conn, *(c for c, _ in self.running.values())]:
                other.close()
            run_pytest(request["args"], request["env"], log_fd, whole_env=True)
        os.close(log_fd)
        self.running[pid] = (conn, time.monotonic() + float(request["limit_s"]))
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")

    def check(self) -> None:
        """Answer for the sessions that ended; kill those past their limit (their notebook went away)."""
        for pid, (conn, end) in list(self.running.items()):
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                if time.monotonic() > end:
                    kill_session(pid)
                continue
            kill_session(pid)  # what it left behind, before the zombie frees its IDs
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
            conn.close()
            del self.running[pid]


def serve(path: Path, idle_s: float = IDLE_S) -> None:
    """Serve gradings, several at once, until ``idle_s`` seconds pass with none."""
    lock = open(path.with_suffix(".lock"), "w")  # noqa: SIM115 (held while the server lives)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server for this key is starting or running
    preload(dict(os.environ))
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # left by a server that was killed
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    sessions, last, closing = _Sessions(listener), time.monotonic(), False
    try:
        while True:
            wait = 0.02 if sessions.running else 0.0 if closing else max(0.0, last + idle_s - time.monotonic())
            if select.select([listener], [], [], wait)[0]:
                conn, _ = listener.accept()
                try:
                    sessions.start(conn)
                except (OSError, ValueError, KeyError):
                    traceback.print_exc()
                    conn.close()
                continue
            sessions.check()
            if sessions.running:
                last = time.monotonic()
            elif closing:
                break
            elif time.monotonic() >= last + idle_s:  # idle: no new client may connect; serve those queued
                path.unlink()
                closing = True
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), float(os.environ.get("MINIKERNEL_GRADE_SERVER_IDLE", IDLE_S)))
