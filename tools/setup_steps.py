"""What every set-up step shares: printing, the step error, running a command.

Standard library only (the set-up runs with the system ``python3`` before any venv exists).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def say(message: str) -> None:
    print(f"[setup] {message}", flush=True)


class StepFailed(Exception):
    """A set-up step failed; the message says what to try."""


def run(step: str, cmd: list[str], hint: str, env: dict[str, str] | None = None) -> None:
    """Run one command; on failure raise StepFailed naming the step and what to try."""
    try:
        result = subprocess.run(cmd, check=False, cwd=ROOT, env=env)
    except OSError as exc:
        raise StepFailed(f"{step}: could not run {cmd[0]} ({exc}). {hint}") from None
    if result.returncode != 0:
        raise StepFailed(f"{step} failed (exit code {result.returncode}). {hint}")
