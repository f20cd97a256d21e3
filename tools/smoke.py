#!/usr/bin/env python3
"""The smoke layer of ``make test``: the course on a second supported Python.

    python3 tools/smoke.py                 # a Python other than .venv's, if one is found
    python3 tools/smoke.py --python PATH   # this interpreter

In a fresh venv (a temporary folder, removed afterwards) it runs what a learner does
first: ``tools/bootstrap.py`` installs that Python's lock (hash-checked; with uv, the
resolver of ``make lock``, which installs the same files in parallel and from its
cache: PyPI's torch for Linux brings about 3 GB of CUDA packages, which pip unpacks
one by one in minutes), then
chapter 01's tests with the references on, the grader on chapter 01 in student mode
(every exercise must be TODO), and chapter 01's notebook against its stored outputs.

The interpreter: ``--python``, else ``MINIKERNEL_SMOKE_PYTHON``, else the first of
python3.13, python3.12, python3.11 (on PATH, then pyenv's versions folder) whose
minor version differs from .venv's. When there is none the layer says so in one line
and passes. pip's download cache is used when present, never required.

Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bootstrap import (
    SUPPORTED,
    VENV,
    python_version_of,
    venv_python,
    venv_python_version,
)
from setup_steps import ROOT

NOTEBOOK = "chapters/01_strides.ipynb"
SANITIZE = "chapters/sanitize.cfg"
# The stored outputs print torch.__version__ of the build they were made with
# ("2.13.0+cpu"); the smoke venv may hold PyPI's CUDA build of the same release
# ("2.13.0+cu130"). Only the build label is given up, the release is still compared.
TORCH_BUILD_LABEL = r"""
[torch build label (smoke layer)]
regex: (\d+\.\d+\.\d+)\+(cpu|cu\d+|rocm[\d.]+)
replace: \1
"""
CHAPTER_TESTS = "tests/ch01"
CHAPTER_GLOB = "1.*"


def pyenv_pythons(minor: tuple[int, int]) -> list[str]:
    """pyenv's installed interpreters of that minor version (pyenv's shims refuse to run
    a version that is not selected, so the versions folder is read directly)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    pattern = f"{minor[0]}.{minor[1]}.*/bin/python{minor[0]}.{minor[1]}"
    return [str(p) for p in sorted((root / "versions").glob(pattern), reverse=True)]


def find_second_python(exclude: tuple[int, int] | None) -> tuple[str, tuple[int, int]] | None:
    explicit = os.environ.get("MINIKERNEL_SMOKE_PYTHON")
    if explicit:
        minor = python_version_of(explicit)
        if minor not in SUPPORTED:
            raise SystemExit(f"[smoke] FAILED: MINIKERNEL_SMOKE_PYTHON={explicit} does not run as "
                             "Python 3.11-3.13; point it at a python3.X executable or unset it")
        return explicit, minor
    for minor in SUPPORTED:
        if minor == exclude:
            continue
        on_path = shutil.which(f"python{minor[0]}.{minor[1]}")
        for candidate in ([on_path] if on_path else []) + pyenv_pythons(minor):
            if python_version_of(candidate) == minor:
                return candidate, minor
    return None


def step(title: str, cmd: list[str], env: dict[str, str]) -> None:
    print(f"[smoke] {title}", flush=True)
    started = time.monotonic()
    result = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(f"[smoke] FAILED: {title} (exit code {result.returncode})")
    print(f"[smoke] ... {time.monotonic() - started:.0f} s", flush=True)


def grade_student_mode(python: Path, env: dict[str, str]) -> None:
    """Every chapter 01 exercise must grade TODO with the stubs (nothing leaks, nothing breaks)."""
    print(f"[smoke] grader, student mode: python -m minikernel grade '{CHAPTER_GLOB}' --json", flush=True)
    out = subprocess.run([str(python), "-m", "minikernel", "grade", CHAPTER_GLOB, "--json"], cwd=ROOT,
                         env=dict(env, MINIKERNEL_SOLUTIONS=""), capture_output=True, text=True, check=False)
    try:
        report = json.loads(out.stdout)
    except ValueError:
        sys.stderr.write(out.stdout + out.stderr)
        raise SystemExit("[smoke] FAILED: the grader printed no JSON") from None
    wrong = [f"{e['id']} {e['status']}" for e in report["exercises"] if e["status"] != "TODO"]
    if not report["exercises"] or wrong or report["passed"] != 0:
        raise SystemExit(f"[smoke] FAILED: in student mode every exercise must be TODO; got {wrong or report}")
    print(f"[smoke] ... {len(report['exercises'])} exercises TODO, exit code {out.returncode}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 tools/smoke.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", help="the interpreter to check (default: see above)")
    parser.add_argument("--keep", action="store_true", help="keep the venv (prints where)")
    args = parser.parse_args(argv)
    if args.python:
        found = (args.python, python_version_of(args.python))
        if found[1] not in SUPPORTED:
            raise SystemExit(f"[smoke] {args.python} is Python {found[1]}; the course needs 3.11-3.13")
    else:
        found = find_second_python(venv_python_version(VENV))
    if found is None:
        print("[smoke] SKIPPED: no second supported Python (3.11-3.13 besides .venv's) on PATH or in "
              "pyenv; set MINIKERNEL_SMOKE_PYTHON=/path/to/python3.X to run this layer", flush=True)
        return 0
    interpreter, minor = found
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f"minikernel-smoke-py{minor[0]}{minor[1]}-"))
    venv = tmp / "venv"
    python = venv_python(venv)
    # numba's on-disk cache for this run goes in the temporary folder, not the checkout.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "numba-cache"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("VIRTUAL_ENV", None)
    try:
        print(f"[smoke] Python {minor[0]}.{minor[1]} ({interpreter}), fresh venv in {venv}", flush=True)
        step(f"install lock-py{minor[0]}.{minor[1]}.txt: tools/bootstrap.py --venv ... --python ...",
             [sys.executable, str(ROOT / "tools" / "bootstrap.py"), "--venv", str(venv), "--python", interpreter,
              "--with-uv"],
             env)
        step(f"{CHAPTER_TESTS} with the references (MINIKERNEL_SOLUTIONS=all)",
             [str(python), "-m", "pytest", CHAPTER_TESTS, "-q", "-p", "no:randomly", "-x"],
             dict(env, MINIKERNEL_SOLUTIONS="all"))
        grade_student_mode(python, env)
        sanitize = tmp / "sanitize.cfg"
        sanitize.write_text((ROOT / SANITIZE).read_text() + TORCH_BUILD_LABEL)
        step(f"{NOTEBOOK} against its stored outputs (nbval, references on; {SANITIZE} + torch's build label)",
             [str(python), "-m", "pytest", "--nbval", "--nbval-current-env",
              "--nbval-sanitize-with", str(sanitize), NOTEBOOK, "-q", "-p", "no:randomly"],
             dict(env, MINIKERNEL_SOLUTIONS="all"))
    finally:
        if args.keep:
            print(f"[smoke] kept {tmp}", flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"[smoke] Python {minor[0]}.{minor[1]}: passed ({time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
