"""Runs inside the grading sandbox, around ``python -m minikernel grade --json``.

Standard library only: run as a script (``python launcher.py [limits] -- COMMAND``),
never imported with the course. It

* sets the resource limits it is given (processes, open files, file size, address
  space), so that every process of the grading inherits them;
* makes itself the *subreaper* of everything below it: a process that leaves its
  exercise's process group and session (double fork + ``setsid``) is re-parented
  here, not to the system's init, and cannot get away;
* kills such a process once the exercise that started it has ended, and fails that
  exercise with a message naming the limit. An exercise is recognised by the grader's
  per-exercise files the process still holds open (``<id>.stack``), else by when it
  started (the exercises running then, from those files' times);
* prints the grader's JSON report with those verdicts amended.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
CLONE_NEWUSER = 0x10000000
POLL_S = 0.05
GRACE_S = 0.3  # the grader kills an exercise's group just before it writes the outcome
LIMIT_TEXT = ("left a process running after its exercise ended ({what}); the grading sandbox killed it. "
              "Every process an exercise starts must end with it (a daemon: double fork + setsid?)")
_EXERCISE_FILE = re.compile(r"/minikernel-grade-[^/]+/(\d+\.\d+)\.(stack|progress)$")
_TICKS = os.sysconf("SC_CLK_TCK")


LINUX = sys.platform.startswith("linux") and os.path.isdir("/proc/self")


def _prctl(*args: int) -> bool:
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl(*args, 0, 0, 0) == 0


def set_subreaper() -> bool:
    return LINUX and _prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent() -> None:
    """SIGTERM here when the gradebook dies (even by SIGKILL): the handler kills what runs below."""
    if LINUX:
        _prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))


def own_user_namespace() -> bool:
    """Enter a new user namespace (unprivileged), so that the process limit set next counts
    only the processes in it, not every process of this user on the machine."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.unshare(CLONE_NEWUSER) == 0


def set_limits(args: argparse.Namespace) -> None:
    for name, value in (("RLIMIT_NPROC", args.nproc), ("RLIMIT_NOFILE", args.nofile),
                        ("RLIMIT_FSIZE", args.fsize), ("RLIMIT_AS", args.address_space)):
        if value:
            resource.setrlimit(getattr(resource, name), (value, value))


def _stat(pid: int) -> tuple[int, str, float] | None:
    """(parent pid, state, start in seconds since boot) of ``pid``, or None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[19]) / _TICKS


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:120] or "?"


def _held_exercises(pid: int) -> set[str]:
    found = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            match = _EXERCISE_FILE.search(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
        if match:
            found.add(match.group(1))
    return found


class Watch:
    """The exercises' run times (from the grader's files) and the processes left behind."""

    def __init__(self, grader_pid: int) -> None:
        self.grader_pid = grader_pid
        self.windows: dict[str, list[float | None]] = {}  # id -> [start, end] in seconds since boot
        self.strays: dict[int, dict] = {}  # pid -> {"what", "ids", "seen"}
        self.killed: list[dict] = []
        self._offset = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)

    def scan_exercises(self) -> None:
        for folder in Path(tempfile.gettempdir()).glob("minikernel-grade-*"):
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                stem, _, kind = entry.name.rpartition(".")
                if kind not in ("stack", "outcome") or not re.fullmatch(r"\d+\.\d+", stem):
                    continue
                try:
                    mtime = entry.stat().st_mtime - self._offset
                except OSError:
                    continue
                window = self.windows.setdefault(stem, [None, None])
                if kind == "stack" and window[0] is None:
                    window[0] = mtime
                elif kind == "outcome" and window[1] is None:
                    window[1] = time.clock_gettime(time.CLOCK_BOOTTIME)  # seen now: after the group kill

    def _candidates(self, started: float) -> set[str]:
        return {i for i, (start, end) in self.windows.items()
                if start is not None and start - 0.05 <= started and (end is None or started <= end)}

    def scan_strays(self) -> None:
        me = os.getpid()
        for entry in os.listdir("/proc") if LINUX else []:
            if not entry.isdigit() or int(entry) in (me, self.grader_pid):
                continue
            pid = int(entry)
            stat = _stat(pid)
            if stat is None or stat[0] != me or stat[1] == "Z":
                continue
            if pid not in self.strays:
                ids = _held_exercises(pid) or self._candidates(stat[2])
                self.strays[pid] = {"what": f"pid {pid}: {_cmdline(pid)}", "ids": sorted(ids),
                                    "seen": time.clock_gettime(time.CLOCK_BOOTTIME)}

    def kill_finished(self, everything: bool = False) -> None:
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        for pid, stray in list(self.strays.items()):
            ends = [self.windows.get(i, [None, None])[1] for i in stray["ids"]]
            done = all(e is not None and now - e > GRACE_S for e in ends) and now - stray["seen"] > GRACE_S
            if not (everything or done):
                continue
            stat = _stat(pid)
            if stat is not None and stat[1] != "Z":
                _kill_tree(pid)
                self.killed.append(stray)
            del self.strays[pid]


def _kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and its session (what it started goes with it; the rest is re-parented here)."""
    try:
        sid = os.getsid(pid)
        if sid == pid:
            os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap() -> int | None:
    """Reap every child that has ended; the grader's exit status when it is among them."""
    status = None
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == WATCHED[0]:
            status = os.waitstatus_to_exitcode(code)


WATCHED = [0]


def amend(report_text: str, killed: list[dict]) -> str:
    """The grader's JSON report with an exercise that left a process running marked FAIL."""
    if not killed:
        return report_text
    try:
        report = json.loads(report_text)
        rows = {row["id"]: row for row in report["exercises"]}
    except (ValueError, KeyError, TypeError):
        return report_text
    unplaced = []
    for stray in killed:
        ids = [i for i in stray["ids"] if i in rows]
        if len(ids) != 1:
            unplaced.append(stray["what"] + (f" (started while {', '.join(ids)} ran)" if ids else ""))
            continue
        row = rows[ids[0]]
        text = LIMIT_TEXT.format(what=stray["what"])
        row["detail"] = text if row["status"] != "FAIL" else f"{text}\n{row['detail']}"
        row["status"] = "FAIL"
    if unplaced:
        note = ("processes left running by the submission were killed by the grading sandbox "
                "(every process an exercise starts must end with it): " + "; ".join(unplaced))
        report["error"] = "\n".join(filter(None, [report.get("error", ""), note]))
    report["passed"] = sum(r["status"] == "PASS" for r in report["exercises"])
    return json.dumps(report, indent=2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="launcher.py")
    parser.add_argument("--nproc", type=int, default=0)
    parser.add_argument("--nofile", type=int, default=0)
    parser.add_argument("--fsize", type=int, default=0)
    parser.add_argument("--address-space", type=int, default=0)
    parser.add_argument("--user", type=int, default=None, help="run the command as this user (from root)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if LINUX and not set_subreaper():
        print("sandbox: cannot become the subreaper of the grading (prctl failed)", file=sys.stderr)
    nproc, args.nproc = args.nproc, 0
    set_limits(args)
    if args.user is not None:
        os.setgroups([])
        os.setgid(args.user)
        os.setuid(args.user)
        if nproc and not own_user_namespace():
            print("sandbox: no user namespace of its own", file=sys.stderr)  # plan() looks for these words
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    parent = os.getppid()
    die_with_parent()  # after any change of user, which clears it
    if os.getppid() != parent:
        return 143
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryFile() as out:
        grader = subprocess.Popen(command, stdout=out)
        WATCHED[0] = grader.pid
        watch = Watch(grader.pid)
        status = None
        try:
            while status is None:
                watch.scan_exercises()
                watch.scan_strays()
                watch.kill_finished()
                status = _reap()
                time.sleep(POLL_S)
        finally:
            watch.scan_strays()
            watch.kill_finished(everything=True)
            _kill_rest(grader.pid)
        out.seek(0)
        sys.stdout.write(amend(out.read().decode(errors="replace"), watch.killed))
    return status or 0


def _kill_rest(grader_pid: int) -> None:
    """Nothing started below this process outlives it: kill and reap until no child is left."""
    try:
        os.kill(grader_pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for _ in range(200):
        me = os.getpid()
        children = [int(e) for e in (os.listdir("/proc") if LINUX else []) if e.isdigit()
                    and (_stat(int(e)) or (0,))[0] == me]
        for pid in children:
            _kill_tree(pid)
        _reap()
        if not children:
            return
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main())
