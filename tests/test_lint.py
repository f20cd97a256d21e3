"""ruff's lint rules (configured in pyproject.toml) hold for the whole course's code."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ["minikernel", "solutions", "widgets", "tests", "tools"]


def test_ruff_check_is_clean():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           *CHECKED], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "No module named ruff" not in proc.stderr, (
        "ruff is not installed in this environment: it is one of the test dependencies (make setup installs it)")
    assert proc.returncode == 0, (f"ruff check found problems (fix them, or run `ruff check --fix {' '.join(CHECKED)}` "
                                  f"for the automatic ones):\n{proc.stdout}{proc.stderr}")


def test_ruff_reads_the_projects_configuration():
    # Guards against a clean run that checked nothing: an unused import must be found.
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--stdin-filename",
                           str(ROOT / "minikernel" / "_probe.py"), "-"], input="import os\n",
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "F401" in proc.stdout, proc.stdout + proc.stderr
