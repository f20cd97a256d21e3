#!/usr/bin/env python3
"""Regenerate the lock files: every package, pinned with its hashes, per supported Python.

    python3 tools/lock.py                      # make lock: refresh lock-py3.11.txt ... lock-py3.13.txt
    python3 tools/lock.py --check              # exit 1 when a lock is not what make lock writes
    python3 tools/lock.py --upgrade-package X  # move X (and what it needs) to its newest allowed release
    python3 tools/lock.py --upgrade            # move everything (review the diff!)

Inputs: ``pyproject.toml`` (what the course needs, with its ``[test]`` extra) and
``constraints.txt`` (the exact pins a maintainer edits). The resolver is uv's
``pip compile`` (pinned, with hashes, in ``tools/lock-tools.txt``, installed into
``.venv-lock/``). It resolves for Linux and Windows at once (``--universal``; the
platforms are ``[tool.uv] environments`` in pyproject.toml) and writes every file's
sha256 from PyPI. The existing lock is read back as the preferred versions, so running
this again without ``--upgrade`` rewrites the same bytes: a new release on PyPI does
not move anything until a maintainer asks for it.

``tools/lock-extra-hashes.txt`` adds hashes of wheels that are not on PyPI but are the
same release (PyTorch's CPU build of torch): pip installs those where its configuration
offers them, and ``--require-hashes`` accepts them only because they are listed.

Standard library only.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ("3.11", "3.12", "3.13")
TOOLS_VENV = ROOT / ".venv-lock"
TOOLS_REQUIREMENTS = ROOT / "tools" / "lock-tools.txt"
EXTRA_HASHES = ROOT / "tools" / "lock-extra-hashes.txt"
COMPILE_COMMAND = "make lock"


def lock_path(python: str) -> Path:
    """``lock-py3.X.txt`` at the repository root: the file the bootstrap installs from."""
    return ROOT / f"lock-py{python}.txt"


def say(message: str) -> None:
    print(f"[lock] {message}", flush=True)


class LockError(Exception):
    """A step failed; the message says what to do."""


# ----------------------------------------------------------------- the resolver


def uv_executable() -> Path:
    """uv from ``.venv-lock`` (created, and filled from tools/lock-tools.txt, when missing)."""
    bindir = "Scripts" if os.name == "nt" else "bin"
    uv = TOOLS_VENV / bindir / ("uv.exe" if os.name == "nt" else "uv")
    stamp = TOOLS_VENV / ".lock-tools"
    wanted = TOOLS_REQUIREMENTS.read_text()
    if uv.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return uv
    say(f"installing the resolver into {TOOLS_VENV.name}/ from {TOOLS_REQUIREMENTS.relative_to(ROOT)}")
    venv.EnvBuilder(with_pip=True, clear=True).create(TOOLS_VENV)
    python = TOOLS_VENV / bindir / ("python.exe" if os.name == "nt" else "python")
    result = subprocess.run([str(python), "-m", "pip", "install", "-qq", "--disable-pip-version-check",
                             "--require-hashes", "--no-deps", "-r", str(TOOLS_REQUIREMENTS)], check=False)
    if result.returncode != 0 or not uv.exists():
        raise LockError(f"could not install uv from {TOOLS_REQUIREMENTS}: check that PyPI is reachable")
    stamp.write_text(wanted)
    return uv


def compile_command(uv: Path, python: str, output: Path, upgrade: list[str]) -> list[str]:
    return [
        str(uv), "pip", "compile", "pyproject.toml",
        "--extra", "test",
        "--constraints", "constraints.txt",
        # visdom is an sdist whose setup.py needs pkg_resources (setuptools<81): the
        # same pins apply inside the build environment uv uses to read its metadata.
        "--build-constraints", "constraints.txt",
        "--universal", "--python-version", python,
        "--generate-hashes",
        "--custom-compile-command", COMPILE_COMMAND,
        "--no-progress", "--quiet",
        "--output-file", str(output),
        *upgrade,
    ]


# ---------------------------------------------------------- hashes beyond PyPI


def read_extra_hashes(path: Path = EXTRA_HASHES) -> list[tuple[str, str, str, str]]:
    """Lines ``<python> <name>==<version> sha256:<hex> <file name>`` (``#`` comments)."""
    entries = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if (len(parts) != 4 or parts[0] not in PYTHONS or "==" not in parts[1]
                or not re.fullmatch(r"sha256:[0-9a-f]{64}", parts[2])):
            raise LockError(f"{path.name}:{number}: expected '<3.X> <name>==<version> sha256:<64 hex> "
                            f"<wheel file name>', found {raw!r}")
        entries.append((parts[0], parts[1], parts[2], parts[3]))
    return entries


def add_extra_hashes(text: str, python: str, entries: list[tuple[str, str, str, str]]) -> str:
    """Append each extra hash to its package's entry in a lock for ``python``.

    The entry must pin the same version: a bumped pin with a stale extra hash is an
    error (the wheel of the old version would no longer be the release that is locked).
    """
    for entry_python, pin, digest, filename in entries:
        if entry_python != python:
            continue
        name = pin.split("==")[0]
        match = re.search(rf"^{re.escape(pin)}(?: ;[^\\\n]*)? \\\n((?:    --hash=sha256:[0-9a-f]{{64}}(?: \\)?\n)+)",
                          text, flags=re.MULTILINE)
        if match is None:
            raise LockError(f"{EXTRA_HASHES.name} lists {filename} for {pin}, but lock-py{python}.txt does "
                            f"not pin {pin}: update the line (or remove it) after bumping {name}")
        if digest in match.group(1):
            continue
        hashes = match.group(1).rstrip("\n")
        hashes = hashes if hashes.endswith("\\") else hashes + " \\"
        text = text[:match.start(1)] + hashes + f"\n    --hash={digest}\n" + text[match.end(1):]
    return text


# --------------------------------------------------------------------- running


def lock_one(uv: Path, python: str, target: Path, upgrade: list[str]) -> str:
    """The lock text for ``python``, resolved with ``target``'s pins as preferences."""
    with tempfile.TemporaryDirectory(prefix="minikernel-lock-") as tmp:
        output = Path(tmp) / target.name
        if target.is_file():
            output.write_text(target.read_text())  # uv keeps the versions already in -o
        result = subprocess.run(compile_command(uv, python, output, upgrade), check=False, cwd=ROOT)
        if result.returncode != 0:
            raise LockError(f"uv could not resolve for Python {python} (see above); fix constraints.txt "
                            "or pyproject.toml and rerun make lock")
        text = output.read_text()
    return add_extra_hashes(text, python, read_extra_hashes())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 tools/lock.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if a lock would change")
    parser.add_argument("--upgrade", action="store_true", help="allow every package to move to its newest release")
    parser.add_argument("--upgrade-package", "-P", action="append", default=[], metavar="NAME",
                        help="allow NAME to move to its newest allowed release (repeatable)")
    args = parser.parse_args(argv)
    upgrade = (["--upgrade"] if args.upgrade else []) + [a for p in args.upgrade_package for a in ("-P", p)]
    try:
        uv = uv_executable()
        stale = []
        for python in PYTHONS:
            target = lock_path(python)
            text = lock_one(uv, python, target, upgrade)
            old = target.read_text() if target.is_file() else ""
            if text == old:
                say(f"{target.name} is up to date")
            elif args.check:
                stale.append(target.name)
                sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                           target.name, "make lock", n=1))
            else:
                target.write_text(text)
                say(f"wrote {target.name}")
        if stale:
            raise LockError(f"{', '.join(stale)} differ from what make lock writes: run make lock and commit")
    except LockError as exc:
        say(f"FAILED: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
