"""What every set-up step shares: printing, the step error, running a command.

Standard library only (the set-up runs with the system ``python3`` before any venv exists).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def say(message: str) -> None:
    print(f"[setup] {message}", flush=True)


class StepFailed(Exception):
    """A set-up step failed; the message says what to try."""


def _downloaded(folder: str, seen: dict[str, int]) -> int:
    """Bytes pip downloaded under ``folder`` so far (its ``pip-unpack-*`` folders), counting
    files it has already removed at their largest."""
    for dirpath, _dirs, files in os.walk(folder):
        if "pip-unpack-" not in dirpath:
            continue
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                seen[path] = max(seen.get(path, 0), os.path.getsize(path))
            except OSError:
                continue
    return sum(seen.values())


class Progress:
    """While a download step runs: how many bytes pip has fetched, and for how long.

    pip (``-qq``) shows nothing; it downloads into its temporary folder, so the step
    points ``TMPDIR`` at a folder of ours and this thread reports the bytes written
    there: one updated line on a terminal (every 2 s), a line every 30 s otherwise.
    """

    every, every_log = 2.0, 30.0  #: seconds between reports: on a terminal, and in a log

    def __init__(self, step: str):
        self.step, self.folder = step, tempfile.mkdtemp(prefix="minikernel-pip-")
        self.done = threading.Event()
        self.tty = sys.stdout.isatty()
        self.thread = threading.Thread(target=self._report, daemon=True)

    def _line(self, started: float, seen: dict[str, int]) -> str:
        mb, seconds = _downloaded(self.folder, seen) / 1e6, time.monotonic() - started
        return f"[setup]   {self.step}: {mb:,.0f} MB downloaded, {seconds:.0f} s"

    def _report(self) -> None:
        started, seen, shown = time.monotonic(), {}, False
        while not self.done.wait(self.every if self.tty else self.every_log):
            line = self._line(started, seen)
            print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", flush=True)
            shown = True
        if shown and self.tty:
            print("\r" + self._line(started, seen), flush=True)

    def __enter__(self) -> str:
        self.thread.start()
        return self.folder

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()
        shutil.rmtree(self.folder, ignore_errors=True)


def run(step: str, cmd: list[str], hint: str, env: dict[str, str] | None = None,
        progress: bool = False) -> None:
    """Run one command; on failure raise StepFailed naming the step and what to try.

    ``progress``: report the bytes it downloads meanwhile (``Progress``)."""
    try:
        if progress:
            with Progress(step.split(" (")[0]) as folder:
                result = subprocess.run(cmd, check=False, cwd=ROOT, env=dict(env or os.environ, TMPDIR=folder))
        else:
            result = subprocess.run(cmd, check=False, cwd=ROOT, env=env)
    except OSError as exc:
        raise StepFailed(f"{step}: could not run {cmd[0]} ({exc}). {hint}") from None
    if result.returncode != 0:
        raise StepFailed(f"{step} failed (exit code {result.returncode}). {hint}")
