#!/usr/bin/env python3
"""Set up the course environment in one command.

    python3 tools/bootstrap.py            # .venv with the pinned packages
    python3 tools/bootstrap.py --system   # also chromium + graphviz (for the tests)

What it does:

* creates ``.venv`` (Python 3.11) if it is missing;
* installs the project in editable (compat) mode with its ``[test]`` extra, with
  ``PIP_CONSTRAINT`` pointing at ``constraints.txt`` so that the exact pins also
  apply inside pip's isolated build environments;
* writes ``.venv/.minikernel-stamp`` (sha256 of pyproject.toml + constraints.txt)
  and skips pip entirely while the stamp matches, so running it again is instant;
* with ``--system``: installs the Debian packages the tests need (``chromium``,
  ``graphviz`` and fonts) with apt-get when running as root, or says what to
  install and exits non-zero otherwise.

Standard library only: it runs with the system ``python3`` before any venv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
VENV_PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".minikernel-stamp"
PYPROJECT = ROOT / "pyproject.toml"
CONSTRAINTS = ROOT / "constraints.txt"
PYTHON_MINOR = (3, 11)

CHROMIUM = Path("/usr/bin/chromium")
FONT_DIRS = (Path("/usr/share/fonts"), Path("/usr/local/share/fonts"))
# chromium's "Recommends" are not needed headless (sandbox: tests pass
# --no-sandbox; GPU: --disable-gpu), except fonts: without any font every glyph
# renders as a box. fonts-liberation (Arial/Times/Courier metrics) is one of
# chromium's recommends and matches the fonts web pages ask for.
FONT_PACKAGES = ("fonts-dejavu-core", "fonts-liberation")


def say(message: str) -> None:
    print(f"[setup] {message}", flush=True)


class StepFailed(Exception):
    """A set-up step failed; the message says what to try."""


# --------------------------------------------------------------------------- venv


def stamp_digest() -> str:
    """sha256 over pyproject.toml and constraints.txt: what the venv was built from."""
    digest = hashlib.sha256()
    for path in (PYPROJECT, CONSTRAINTS):
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def read_stamp() -> str | None:
    try:
        return STAMP.read_text().split()[0]
    except (OSError, IndexError):
        return None


def venv_python_version() -> str | None:
    """The ``version`` recorded in .venv/pyvenv.cfg (no subprocess: keeps the fast path fast)."""
    try:
        for line in (VENV / "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("version", "version_info"):
                return value.strip()
    except OSError:
        pass
    return None


def find_python311() -> str:
    if sys.version_info[:2] == PYTHON_MINOR:
        return sys.executable
    other = shutil.which("python3.11")
    if other:
        return other
    raise StepFailed(
        f"the course needs Python 3.11, but this is Python {sys.version.split()[0]} "
        "and there is no python3.11 on PATH. Install Python 3.11 "
        "(or use environment.yml with conda/mamba) and rerun."
    )


def run(step: str, cmd: list[str], hint: str, env: dict[str, str] | None = None) -> None:
    """Run one command; on failure raise StepFailed naming the step and what to try."""
    try:
        result = subprocess.run(cmd, cwd=ROOT, env=env)
    except OSError as exc:
        raise StepFailed(f"{step}: could not run {cmd[0]} ({exc}). {hint}") from None
    if result.returncode != 0:
        raise StepFailed(f"{step} failed (exit code {result.returncode}). {hint}")


def constraint_file() -> tuple[str, str | None]:
    """Absolute path for PIP_CONSTRAINT, plus a temp dir to remove afterwards.

    pip splits PIP_CONSTRAINT on whitespace, so a checkout path containing spaces
    is replaced by a copy in a temporary directory.
    """
    path = str(CONSTRAINTS)
    if not any(ch.isspace() for ch in path):
        return path, None
    tmp = tempfile.mkdtemp(prefix="minikernel-")
    copy = os.path.join(tmp, "constraints.txt")
    shutil.copyfile(CONSTRAINTS, copy)
    return copy, tmp


def ensure_venv(verbose: bool) -> None:
    for path in (PYPROJECT, CONSTRAINTS):
        if not path.is_file():
            raise StepFailed(f"{path} is missing; run this from a complete checkout.")

    if VENV.exists():
        version = venv_python_version()
        if version is not None and tuple(int(p) for p in version.split(".")[:2]) != PYTHON_MINOR:
            raise StepFailed(
                f".venv was made with Python {version}, the course needs 3.11: "
                "delete it (rm -rf .venv) and rerun."
            )
        if not VENV_PYTHON.exists():
            raise StepFailed(".venv exists but has no bin/python: delete it (rm -rf .venv) and rerun.")
        digest = stamp_digest()
        if read_stamp() == digest:
            say(".venv is up to date (pyproject.toml and constraints.txt unchanged)")
            return
        say(".venv exists but pyproject.toml or constraints.txt changed: updating it")
    else:
        python = find_python311()
        say(f"creating .venv with {python} ...")
        run(
            "creating .venv",
            [python, "-m", "venv", str(VENV)],
            "On Debian/Ubuntu the venv module is in a separate package: "
            "sudo apt-get install python3.11-venv (or python3-venv), "
            "then delete .venv and rerun.",
        )
        digest = stamp_digest()

    # A failed or interrupted install must not leave a matching stamp behind.
    STAMP.unlink(missing_ok=True)

    constraints, tmp = constraint_file()
    env = dict(os.environ)
    env["PIP_CONSTRAINT"] = constraints
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    pip = [str(VENV_PYTHON), "-m", "pip"]
    quiet = [] if verbose else ["-q", "--progress-bar", "off"]
    retry = (
        "Rerun with -v to see pip's full output. Check that PyPI is reachable and, if "
        "you edited constraints.txt or pyproject.toml, that their pins agree. "
        "To start afresh: rm -rf .venv && python3 tools/bootstrap.py"
    )
    try:
        started = time.monotonic()
        say("step 1/3: pip build tools (setuptools from constraints.txt, wheel)")
        run("step 1/3 (pip install setuptools wheel)", pip + ["install", *quiet, "--upgrade", "setuptools", "wheel"], retry, env)

        say("step 2/3: the course packages, pinned by constraints.txt "
            "(about 1-2 minutes the first time; torch is large)")
        run("step 2/3 (pip install -e .[test] with PIP_CONSTRAINT=constraints.txt)",
            # compat mode: a .pth with the repo root, so every top-level package
            # (minikernel, solutions, widgets, and any added later) imports without
            # a reinstall; the default finder only maps packages present at install.
            pip + ["install", *quiet, "--config-settings", "editable_mode=compat", "-e", ".[test]"], retry, env)

        say("step 3/3: checking the installed packages are consistent (pip check)")
        run("step 3/3 (pip check)", pip + ["check"], retry, env)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    STAMP.write_text(digest + "\n")
    say(f".venv is ready ({time.monotonic() - started:.0f} s). Next: make lab")


# ------------------------------------------------------------------ system packages


def have_fonts() -> bool:
    for base in FONT_DIRS:
        if base.is_dir():
            for _dirpath, _dirs, files in os.walk(base):
                if any(f.lower().endswith((".ttf", ".otf", ".ttc", ".pfb")) for f in files):
                    return True
    return False


def missing_system_packages() -> list[str]:
    missing = []
    if not CHROMIUM.exists():
        missing.append("chromium")
    if shutil.which("dot") is None:
        missing.append("graphviz")
    if not have_fonts():
        missing.append("fonts-dejavu-core")
    return missing


def ensure_system() -> None:
    missing = missing_system_packages()
    if not missing:
        say("system packages present: /usr/bin/chromium, graphviz (dot), fonts")
        return
    if os.geteuid() != 0:
        raise StepFailed(f"missing system packages; install them with: sudo apt-get install {' '.join(missing)}")
    if shutil.which("apt-get") is None:
        raise StepFailed(
            f"missing {', '.join(missing)} and there is no apt-get here; the browser tests "
            "expect Debian's chromium at /usr/bin/chromium and graphviz's dot on PATH."
        )
    packages = list(missing)
    if "chromium" in packages:
        packages += [p for p in FONT_PACKAGES if p not in packages]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    hint = "Check that the Debian mirror is reachable, or install them by hand: apt-get install " + " ".join(packages)
    started = time.monotonic()
    say("installing system packages: " + " ".join(packages) + " (apt-get update first)")
    run("apt-get update", ["apt-get", "update", "-q"], hint, env)
    run("apt-get install", ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages], hint, env)
    still = missing_system_packages()
    if still:
        raise StepFailed(f"apt-get finished but these are still missing: {' '.join(still)}")
    say(f"system packages installed ({time.monotonic() - started:.0f} s)")


# -------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 tools/bootstrap.py",
        description="Create .venv with the course's pinned packages (skipped when already up to date).",
    )
    parser.add_argument("--system", action="store_true",
                        help="also install the system packages the tests need (chromium, graphviz)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show pip's full output")
    args = parser.parse_args(argv)
    try:
        if args.system:
            ensure_system()
        ensure_venv(args.verbose)
    except StepFailed as exc:
        say(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        say("interrupted; nothing is marked as installed, rerun to finish")
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
