#!/usr/bin/env python3
"""Set up the course environment in one command.

    python3 tools/bootstrap.py            # .venv with the locked packages
    python3 tools/bootstrap.py --system   # also chromium + graphviz (for the tests)
    python3 tools/bootstrap.py --venv DIR --python PATH   # another venv (the smoke layer)

What it does:

* finds a supported Python (3.11, 3.12 or 3.13): ``python3`` when it is one, else
  ``python3.13``, ``python3.12``, ``python3.11`` on PATH, else says what to install;
* creates ``.venv`` with it and installs ``lock-py3.X.txt`` for that Python with
  ``pip --require-hashes --no-deps``: every package, transitive ones included, at the
  locked version, each file checked against its sha256; nothing is resolved at
  install time. visdom is an sdist: it is built with the lock's setuptools
  (``--no-build-isolation``), installed first;
* installs torch on its own first, then the rest of the lock that torch needs: a CPU
  build of torch (where pip's configuration offers one, see
  tools/lock-extra-hashes.txt) needs none of the CUDA packages PyPI's Linux build does;
* installs the course itself in editable (compat) mode without dependencies, then runs
  ``pip check``;
* writes ``.venv/.minikernel-stamp`` (sha256 of pyproject.toml, constraints.txt and the
  lock) and skips pip entirely while the stamp matches, so running it again is instant;
* installs visdom's front-end files from the npm registry (tools/visdom_static.py);
* with ``--system``: installs the Debian packages the tests need
  (tools/system_packages.py).

Standard library only: it runs with the system ``python3`` before any venv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# tools/ is not a package: run as a script, its own folder is first on sys.path.
import lockfile
from lock import LockError, uv_executable as lock_uv_executable
from setup_steps import ROOT, StepFailed, run, say
from system_packages import ensure_system
from visdom_static import ensure_visdom_assets

VENV = ROOT / ".venv"
PYPROJECT = ROOT / "pyproject.toml"
CONSTRAINTS = ROOT / "constraints.txt"
SUPPORTED = ((3, 13), (3, 12), (3, 11))  # newest first: the order python3.X is looked for
BUILD_TOOLS = ("setuptools",)  # visdom's sdist and the course build with these


def lock_for(minor: tuple[int, int]) -> Path:
    return ROOT / f"lock-py{minor[0]}.{minor[1]}.txt"


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


# ----------------------------------------------------------------- which Python


def python_version_of(executable: str) -> tuple[int, int] | None:
    """(major, minor) that ``executable`` reports, or None when it does not run.

    Asked, not guessed from the name: a pyenv shim named python3.12 may exist on
    PATH and still refuse to run.
    """
    try:
        out = subprocess.run([executable, "-c", "import sys; print(*sys.version_info[:2])"],
                             check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    if out.returncode != 0 or len(parts) != 2:
        return None
    return int(parts[0]), int(parts[1])


def install_advice(system: str = platform.system(), os_release: Path = Path("/etc/os-release")) -> str:
    """What to install on this OS to get a supported Python, in one sentence."""
    if system == "Darwin":
        return ("On an Apple-silicon Mac, install Python 3.13 (brew install python@3.13, or from "
                "python.org), then run: python3.13 tools/bootstrap.py. The GPU exercises have no "
                "simulator there (numba-cuda publishes no macOS build); Intel Macs are not supported "
                "(torch publishes no wheel for them). Otherwise use Linux, WSL 2 or a Linux container.")
    if system == "Windows":
        return ("Install Python 3.13 (winget install Python.Python.3.13, or from python.org), "
                "then run: py -3.13 tools/bootstrap.py")
    info = {}
    try:
        for line in os_release.read_text().splitlines():
            key, _, value = line.partition("=")
            info[key] = value.strip().strip('"')
    except OSError:
        pass
    family = " ".join((info.get("ID", ""), info.get("ID_LIKE", ""))).split()
    if "ubuntu" in family or "debian" in family:
        return ("Install one with apt, e.g. sudo apt-get install python3.11 python3.11-venv "
                "(Debian 12, Ubuntu 22.04 from universe) or python3.12 python3.12-venv "
                "(Ubuntu 24.04), then rerun.")
    if "fedora" in family or "rhel" in family:
        return "Install one with dnf, e.g. sudo dnf install python3.13, then rerun."
    return ("Install Python 3.13, 3.12 or 3.11 from your distribution or python.org, or "
            "use conda: conda env create -f environment.yml (see the README).")


def find_python() -> str:
    """A supported interpreter: this one, else python3.13/3.12/3.11 on PATH."""
    if sys.version_info[:2] in SUPPORTED:
        return sys.executable
    for minor in SUPPORTED:
        candidate = shutil.which(f"python{minor[0]}.{minor[1]}")
        if candidate and python_version_of(candidate) == minor:
            return candidate
    raise StepFailed(
        f"the course needs Python 3.11, 3.12 or 3.13, but python3 is {sys.version.split()[0]} and "
        f"there is no python3.13, python3.12 or python3.11 on PATH. {install_advice()}"
    )


# ------------------------------------------------------------------------ venv


def stamp_digest(lock: Path) -> str:
    """sha256 over pyproject.toml, constraints.txt and the lock: what the venv was built from."""
    digest = hashlib.sha256()
    for path in (PYPROJECT, CONSTRAINTS, lock):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def venv_python_version(venv: Path) -> tuple[int, int] | None:
    """The version recorded in pyvenv.cfg (no subprocess: keeps the fast path fast)."""
    try:
        for line in (venv / "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("version", "version_info"):
                major, minor = value.strip().split(".")[:2]
                return int(major), int(minor)
    except (OSError, ValueError):
        pass
    return None


def installed_requires(python: Path, package: str) -> set[str]:
    """Names ``package`` (installed in that venv) declares as dependencies."""
    code = f"import importlib.metadata as m; print(*(m.requires({package!r}) or []), sep='\\n')"
    out = subprocess.run([str(python), "-c", code], check=False, capture_output=True, text=True)
    if out.returncode != 0:
        raise StepFailed(f"could not read {package}'s metadata in the venv: {out.stderr.strip()}")
    return lockfile.requirement_names(out.stdout.splitlines())


def install_from_lock(venv: Path, lock: Path, verbose: bool, uv: Path | None = None) -> None:
    """Everything the course needs, from the lock, hash-checked, nothing resolved.

    With ``uv`` (the resolver of ``make lock``), uv installs the same files with the same
    hash checks instead of pip: in parallel and from its cache, which makes a second
    fresh venv (the smoke layer) cheap. uv reads no pip configuration, so it always
    takes torch from the index.
    """
    entries = lockfile.read_lock(lock)
    python = venv_python(venv)
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    # -qq: pip prints a warning for every package an empty local index lacks; errors still show.
    quiet = [] if verbose else ["-qq", "--progress-bar", "off"]
    pip = [str(python), "-m", "pip", "install", *quiet, "--require-hashes", "--no-deps"]
    if uv is not None:
        pip = [str(uv), "pip", "install", "--python", str(python), *([] if verbose else ["-q"]),
               "--require-hashes", "--no-deps"]
    retry = (f"Rerun with -v to see pip's full output. Check that PyPI is reachable; a hash "
             f"mismatch means a file differs from the one {lock.name} was made with. "
             f"To start afresh: rm -rf {venv.name} && python3 tools/bootstrap.py")
    with tempfile.TemporaryDirectory(prefix="minikernel-setup-") as tmp:
        def subset(names: list[str], label: str) -> str:
            path = Path(tmp) / f"{label}.txt"
            lockfile.write_requirements(entries, names, path)
            return str(path)

        say(f"step 1/4: build tools from {lock.name} ({', '.join(BUILD_TOOLS)})")
        run("step 1/4 (build tools)", pip + ["-r", subset(list(BUILD_TOOLS), "build")], retry, env)

        # pip ranks a file whose hash the index publishes above one from a find-links
        # folder, so a local CPU build of the locked torch (its hash is in the lock, see
        # tools/lock-extra-hashes.txt) is only taken when asked for on its own first.
        torch = subset(["torch"], "torch")
        local = None if uv else subprocess.run(pip + ["--no-index", "-r", torch], check=False, env=env,
                                               capture_output=not verbose, cwd=ROOT)
        if local is not None and local.returncode == 0:
            say("step 2/4: torch from a wheel folder in pip's configuration (find-links)")
        else:
            say("step 2/4: torch from the package index (the largest download)")
            run("step 2/4 (torch)", pip + ["-r", torch], retry, env, progress=True)

        names = lockfile.needed_entries(entries, {"torch": installed_requires(python, "torch")})
        rest = [n for n in names if n not in BUILD_TOOLS and n != "torch"]
        left_out = sorted(set(entries) - set(names))
        say(f"step 3/4: {len(rest)} more packages from {lock.name}"
            + (f" (not needed by this torch build: {len(left_out)}, e.g. {left_out[0]})" if left_out else ""))
        run("step 3/4 (the locked packages)", pip + ["--no-build-isolation", "-r", subset(rest, "rest")],
            retry, env, progress=True)

    say("step 4/4: the course itself (editable, no dependencies), then pip check")
    # compat mode: a .pth with the repo root, so every top-level package (minikernel,
    # solutions, widgets, and any added later) imports without a reinstall.
    run("step 4/4 (pip install -e .)",
        [str(python), "-m", "pip", "install", *quiet, "--no-deps", "--no-build-isolation",
         "--config-settings", "editable_mode=compat", "-e", str(ROOT)], retry, env)
    run("step 4/4 (pip check)", [str(python), "-m", "pip", "check"], retry, env)


def ensure_venv(venv: Path, interpreter: str | None, verbose: bool, uv: Path | None = None) -> None:
    for path in (PYPROJECT, CONSTRAINTS):
        if not path.is_file():
            raise StepFailed(f"{path} is missing; run this from a complete checkout.")
    name = venv.name if venv.parent == ROOT else str(venv)
    if venv.exists():
        minor = venv_python_version(venv)
        if minor not in SUPPORTED:
            raise StepFailed(f"{name} was made with Python {minor}, the course needs 3.11-3.13: "
                             f"delete it (rm -rf {name}) and rerun.")
        if not venv_python(venv).exists():
            raise StepFailed(f"{name} exists but has no bin/python: delete it (rm -rf {name}) and rerun.")
        lock = lock_for(minor)
        stamp = venv / ".minikernel-stamp"
        if stamp.is_file() and stamp.read_text().split()[:1] == [stamp_digest(lock)]:
            say(f"{name} is up to date (Python {minor[0]}.{minor[1]}, {lock.name} unchanged)")
            return
        say(f"{name} exists but pyproject.toml, constraints.txt or {lock.name} changed: updating it")
    else:
        python = interpreter or find_python()
        minor = python_version_of(python)
        if minor not in SUPPORTED:
            raise StepFailed(f"{python} is Python {minor}; the course needs 3.11, 3.12 or 3.13.")
        say(f"creating {name} with {python} (Python {minor[0]}.{minor[1]}) ...")
        run(f"creating {name}", [python, "-m", "venv", str(venv)],
            f"On Debian/Ubuntu the venv module is a separate package: sudo apt-get install "
            f"python{minor[0]}.{minor[1]}-venv, then delete {name} and rerun.")
        lock = lock_for(minor)
    if not lock.is_file():
        raise StepFailed(f"{lock.name} is missing; run this from a complete checkout (or make lock).")

    # A failed or interrupted install must not leave a matching stamp behind.
    stamp = venv / ".minikernel-stamp"
    stamp.unlink(missing_ok=True)
    started = time.monotonic()
    install_from_lock(venv, lock, verbose, uv)
    stamp.write_text(stamp_digest(lock) + "\n")
    say(f"{name} is ready ({time.monotonic() - started:.0f} s)")


def uv_executable() -> Path:
    """uv as ``make lock`` installs it (tools/lock-tools.txt, hash-checked, in .venv-lock/)."""
    try:
        return lock_uv_executable()
    except LockError as exc:
        raise StepFailed(str(exc)) from None


# ------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 tools/bootstrap.py",
        description="Create .venv with the course's locked packages (skipped when already up to date).",
    )
    parser.add_argument("--system", action="store_true",
                        help="also install the system packages the tests need (chromium, graphviz)")
    parser.add_argument("--venv", type=Path, default=VENV, help="the venv to create or update (default .venv)")
    parser.add_argument("--python", help="the interpreter for a new venv (default: see find_python)")
    parser.add_argument("--with-uv", action="store_true",
                        help="install with uv from .venv-lock (make lock's resolver) instead of pip")
    parser.add_argument("-v", "--verbose", action="store_true", help="show pip's full output")
    args = parser.parse_args(argv)
    venv = args.venv if args.venv.is_absolute() else Path.cwd() / args.venv
    try:
        if args.system:
            ensure_system()
        uv = uv_executable() if args.with_uv else None
        ensure_venv(venv, args.python, args.verbose, uv)
        ensure_visdom_assets(venv)
    except StepFailed as exc:
        say(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        say("interrupted; nothing is marked as installed, rerun to finish")
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
