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

Then the course in an environment of one's own, with the oldest torch it supports
(``OLDEST_TORCH``): a second fresh venv gets that torch from PyPI first, then the course
with ``pip install -e .`` (uv; the other packages at constraints.txt's pins, torch's
pin left out), which must leave that torch in place; the grader then grades every
exercise with the references on, and every one must PASS. ``--no-oldest-torch``
leaves this part out, ``--only-oldest-torch`` runs only it.

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
    uv_executable,
    venv_python,
    venv_python_version,
)
from setup_steps import ROOT, StepFailed

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
# The oldest torch pyproject.toml admits (tests/test_smoke_oldest_torch.py keeps the two equal).
# With 2.11.0 and 2.12.0 the exercises that once failed with them were graded too (docs/installing.md).
OLDEST_TORCH = "2.6.0"
# Per exercise (and for collecting the tests): generous, as the layer shares the cores with the browser layer.
GRADE_TIMEOUT_S = 180


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


def installed_torch(python: Path, env: dict[str, str]) -> str:
    out = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], cwd=tempfile.gettempdir(),
                         env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.stderr.write(out.stderr[-2000:])
        raise SystemExit("[smoke] FAILED: torch does not import in the venv")
    return out.stdout.strip()


def grade_all_with_references(python: Path, env: dict[str, str]) -> None:
    """Every exercise must grade PASS with the references on."""
    print(f"[smoke] grader, references on: MINIKERNEL_SOLUTIONS=all python -m minikernel grade --json "
          f"--timeout {GRADE_TIMEOUT_S}", flush=True)
    started = time.monotonic()
    out = subprocess.run([str(python), "-m", "minikernel", "grade", "--json", "--timeout", str(GRADE_TIMEOUT_S)],
                         cwd=ROOT,
                         env=dict(env, MINIKERNEL_SOLUTIONS="all"), capture_output=True, text=True, check=False)
    try:
        report = json.loads(out.stdout)
    except ValueError:
        sys.stderr.write(out.stdout[-3000:] + out.stderr[-3000:])
        raise SystemExit("[smoke] FAILED: the grader printed no JSON") from None
    wrong = [f"{e['id']} {e['status']}: {e.get('detail', '')[:300]}" for e in report["exercises"]
             if e["status"] != "PASS"]
    if not report["exercises"] or wrong or out.returncode != 0:
        sys.stderr.write(out.stderr[-3000:])
        raise SystemExit("[smoke] FAILED: with the references on every exercise must PASS; got\n  "
                         + "\n  ".join(wrong or [str(report)]))
    print(f"[smoke] ... {report['passed']}/{report['total']} PASS ({time.monotonic() - started:.0f} s)", flush=True)


def oldest_torch_check(interpreter: str, tmp: Path, env: dict[str, str], torch: str = OLDEST_TORCH) -> None:
    """The course installed into a venv that already holds torch ``torch`` (module doc)."""
    started = time.monotonic()
    venv = tmp / f"venv-torch{torch}"
    python = venv_python(venv)
    try:
        uv = str(uv_executable())
    except StepFailed as exc:
        raise SystemExit(f"[smoke] FAILED: {exc}") from None
    print(f"[smoke] torch {torch}: an environment of one's own in {venv}", flush=True)
    step("a fresh venv", [uv, "venv", "--quiet", "--python", interpreter, str(venv)], env)
    step(f"torch=={torch} from PyPI, as the environment had it",
         [uv, "pip", "install", "--quiet", "--python", str(python), f"torch=={torch}"], env)
    # constraints.txt without its torch line: the other packages at the course's pins (visdom's
    # build needs its setuptools pin), torch left as the environment has it.
    constraints = tmp / "constraints-without-torch.txt"
    constraints.write_text("".join(line for line in (ROOT / "constraints.txt").read_text().splitlines(True)
                                   if not line.replace(" ", "").startswith("torch==")))
    step("the course into it: pip install -e . (uv; constraints.txt's pins except torch's)",
         [uv, "pip", "install", "--quiet", "--python", str(python), "--constraints", str(constraints),
          "--build-constraints", str(constraints), "-e", f"{ROOT}[test]"], env)
    version = installed_torch(python, env)
    if version.split("+")[0] != torch:
        raise SystemExit(f"[smoke] FAILED: installing the course changed torch {torch} to {version}")
    print(f"[smoke] ... torch is still {version}", flush=True)
    grade_all_with_references(python, env)
    print(f"[smoke] torch {torch}: passed ({time.monotonic() - started:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 tools/smoke.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", help="the interpreter to check (default: see above)")
    parser.add_argument("--keep", action="store_true", help="keep the venv (prints where)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-oldest-torch", action="store_true",
                       help=f"leave out the course installed beside torch {OLDEST_TORCH}")
    which.add_argument("--only-oldest-torch", action="store_true",
                       help=f"run only the course installed beside torch {OLDEST_TORCH}")
    parser.add_argument("--torch", default=OLDEST_TORCH, metavar="VERSION",
                        help=f"the torch the course is installed beside (default {OLDEST_TORCH})")
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
        if not args.only_oldest_torch:
            lock_checks(interpreter, minor, tmp, venv, python, env)
        if not args.no_oldest_torch:
            oldest_torch_check(interpreter, tmp, env, args.torch)
    finally:
        if args.keep:
            print(f"[smoke] kept {tmp}", flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"[smoke] Python {minor[0]}.{minor[1]}: passed ({time.monotonic() - started:.0f} s)", flush=True)
    return 0


def lock_checks(interpreter: str, minor: tuple[int, int], tmp: Path, venv: Path, python: Path,
                env: dict[str, str]) -> None:
    """A fresh venv from the lock: chapter 01's tests, the grader in student mode, chapter 01's notebook."""
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


if __name__ == "__main__":
    raise SystemExit(main())
