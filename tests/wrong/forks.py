"""Run ``python -m minikernel grade`` requests in forks of the corpus zygote (``zygote.py``).

Shared by the corpus (``test_corpus.py``: one request per wrong solution) and the order
check (``test_order.py``: one request per exercise, with the references before it on).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def grader_env(solutions: str) -> dict:
    """The environment of one graded request: ``MINIKERNEL_SOLUTIONS`` and the fast-fail plugin."""
    return {"MINIKERNEL_SOLUTIONS": solutions, "PYTHONPATH": str(ROOT),
            "PYTEST_ADDOPTS": f"{os.environ.get('PYTEST_ADDOPTS', '')} -x -p tests.wrong.fastfail".strip()}


def grade_in_forks(requests: list[dict], workers: int, limit_s: float) -> Iterator[dict]:
    """Send ``requests`` (``{"case": key, "exercise": "N.M", "args": [...], "env": {...}}``) to
    one zygote process and yield its reply per request as each finishes (see zygote.py)."""
    zygote_env = {k: v for k, v in os.environ.items() if k not in ("MINIKERNEL_CORPUS", "MINIKERNEL_OVERRIDE")}
    proc = subprocess.Popen([sys.executable, "-m", "tests.wrong.zygote", f"--workers={workers}",
                             f"--limit={limit_s}"], cwd=ROOT, env=zygote_env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    proc.stdin.close()
    for line in proc.stdout:
        yield json.loads(line)
    assert proc.wait() == 0, f"the corpus zygote exited with {proc.returncode}"
