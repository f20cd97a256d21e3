"""Lower GPU kernels for a real GPU without one, once per version of their sources.

The simulator never compiles a kernel. A script run in a process without it
(``NUMBA_ENABLE_CUDASIM=0``) makes numba-cuda type and lower the active kernels to NVVM
IR for compute capability 8.0, which catches what a real GPU would refuse (allocation,
Python objects, functions CUDA lacks) without a GPU or a driver. It prints one line per
kernel and type: ``LOWERED <name> ...`` or ``FAILED <name> ...``.

Lowering takes seconds and the grader runs each exercise in its own process, so the
first process lowers and the others read its output, kept under the temporary folder
and keyed on the script, numba's versions, ``MINIKERNEL_SOLUTIONS``, every source file
the kernels are built from and the ``MINIKERNEL_OVERRIDE`` files: an edit anywhere
lowers them again.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numba

from minikernel.course.exercise import OVERRIDE_VAR, parse_overrides

ROOT = Path(__file__).resolve().parents[1]


def lowered(script: str, sources: list[Path]) -> str:
    """``script``'s output, run with ``NUMBA_ENABLE_CUDASIM=0`` from the project root, or
    the output kept from an earlier run with the same key."""
    overrides = sorted(parse_overrides(os.environ.get(OVERRIDE_VAR)).values())
    key = hashlib.sha256("\0".join(
        [script, numba.__version__, _version("numba-cuda"), os.environ.get("MINIKERNEL_SOLUTIONS", "")]
        + [f"{p}\0{p.read_text()}" for p in [*sources, *overrides]]).encode()).hexdigest()[:20]
    cached = Path(tempfile.gettempdir()) / f"minikernel-lowered-{key}.txt"
    with open(cached.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a process lowering at the same time finishes first
        if cached.exists():
            return cached.read_text()
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
        proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(proc.stdout)
        tmp.replace(cached)
        return proc.stdout


def python_files(*folders: str) -> list[Path]:
    """The ``.py`` files directly in each of ``folders`` (relative to the project root), sorted."""
    return sorted(f for folder in folders for f in (ROOT / folder).glob("*.py"))


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "none"
