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
* installs visdom's front-end files (JavaScript, CSS, fonts, MathJax) into the
  venv's ``visdom/static/`` from the npm registry, as listed in
  ``tools/visdom_assets.json`` (tarballs checked against the registry's sha512),
  so the dashboard server never downloads anything when it starts; a second
  stamp, ``.venv/.minikernel-visdom-stamp``, covers that list;
* with ``--system``: installs the Debian packages the tests need (``chromium``,
  ``graphviz`` and fonts) with apt-get when running as root, or says what to
  install and exits non-zero otherwise.

Standard library only: it runs with the system ``python3`` before any venv exists.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
VENV_PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".minikernel-stamp"
PYPROJECT = ROOT / "pyproject.toml"
CONSTRAINTS = ROOT / "constraints.txt"
PYTHON_MINOR = (3, 11)
VISDOM_ASSETS = ROOT / "tools" / "visdom_assets.json"
VISDOM_STAMP = VENV / ".minikernel-visdom-stamp"
NPM_REGISTRY = "https://registry.npmjs.org"
DOWNLOAD_TIMEOUT_S = 60

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
    say(f".venv is ready ({time.monotonic() - started:.0f} s)")


# ------------------------------------------------------- visdom front-end files
#
# visdom's server fetches its JavaScript/CSS/fonts from CDNs the first time it
# starts and exits when it cannot (offline). It skips that when every file exists
# and static/version.built holds the visdom version. The same releases are on the
# npm registry, so the set-up installs them from there, checked by sha512.


def visdom_package_dir() -> Path | None:
    """``.venv/lib/python3.X/site-packages/visdom`` (found without running Python)."""
    for pattern in ("lib/python3*/site-packages/visdom", "Lib/site-packages/visdom"):
        for path in sorted(VENV.glob(pattern)):
            if (path / "VERSION").is_file():
                return path
    return None


def load_visdom_assets() -> dict:
    try:
        return json.loads(VISDOM_ASSETS.read_text())
    except (OSError, ValueError) as exc:
        raise StepFailed(f"cannot read {VISDOM_ASSETS} ({exc}); run this from a complete checkout.") from None


def missing_visdom_assets(static: Path, manifest: dict) -> list[str]:
    """The files of ``manifest`` (paths under static/) that are not there."""
    return [dst for package in manifest["packages"] for _src, dst in package["files"]
            if not (static / dst).is_file()]


def visdom_assets_digest(manifest_bytes: bytes, visdom_version: str) -> str:
    return hashlib.sha256(manifest_bytes + b"\0" + visdom_version.encode()).hexdigest()


def _registry() -> str:
    # npm's own variable, so a mirror configured for npm works here too.
    return (os.environ.get("npm_config_registry") or os.environ.get("NPM_CONFIG_REGISTRY")
            or NPM_REGISTRY).rstrip("/")


def _fetch(url: str) -> bytes:
    """GET ``url`` (proxies from the environment), one retry on a network error."""
    request = urllib.request.Request(url, headers={"User-Agent": "minikernel-setup",
                                                   "Accept": "application/json, */*"})
    for attempt in (1, 2):
        try:
            with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            raise StepFailed(f"{url} answered HTTP {exc.code}") from None
        except (OSError, urllib.error.URLError) as exc:
            if attempt == 2:
                raise StepFailed(f"could not download {url} ({exc})") from None
            time.sleep(1)
    raise AssertionError("unreachable")


def _check_integrity(data: bytes, dist: dict, what: str) -> None:
    """Compare the tarball with the registry's ``dist.integrity`` (sha512, SRI format)."""
    for entry in dist.get("integrity", "").split():
        algo, _, expected = entry.partition("-")
        if algo == "sha512":
            actual = base64.b64encode(hashlib.sha512(data).digest()).decode()
            if actual != expected:
                raise StepFailed(f"{what}: the tarball's sha512 does not match the registry's integrity")
            return
    raise StepFailed(f"{what}: the registry gives no sha512 integrity for the tarball")


def npm_package_files(name: str, version: str, paths: list[str]) -> dict[str, bytes]:
    """Download ``name@version`` from the npm registry, verify it, return ``paths`` from it."""
    what = f"{name}@{version}"
    try:
        dist = json.loads(_fetch(f"{_registry()}/{name}/{version}"))["dist"]
    except (ValueError, KeyError, TypeError):
        raise StepFailed(f"{what}: unexpected answer from the registry (no dist field)") from None
    data = _fetch(dist["tarball"])
    _check_integrity(data, dist, what)
    found: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            # npm tarballs have one top folder (usually "package/"); paths are below it.
            inner = member.name.split("/", 1)[1] if "/" in member.name else ""
            if member.isfile() and inner in paths and inner not in found:
                found[inner] = tar.extractfile(member).read()
    missing = sorted(set(paths) - set(found))
    if missing:
        raise StepFailed(f"{what}: the tarball has no {', '.join(missing)}; fix tools/visdom_assets.json")
    return found


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def ensure_visdom_assets() -> None:
    package = visdom_package_dir()
    if package is None:
        raise StepFailed("visdom is not installed in .venv; delete .venv and rerun.")
    version = (package / "VERSION").read_text().strip()
    manifest_bytes = VISDOM_ASSETS.read_bytes() if VISDOM_ASSETS.is_file() else b""
    manifest = load_visdom_assets()
    if manifest.get("visdom") != version:
        raise StepFailed(f"tools/visdom_assets.json lists the files of visdom {manifest.get('visdom')}, "
                         f"but .venv has visdom {version}: update the list from visdom/server/build.py.")
    static = package / "static"
    built = static / "version.built"
    digest = visdom_assets_digest(manifest_bytes, version)
    try:
        stamp = VISDOM_STAMP.read_text().split()[0]
    except (OSError, IndexError):
        stamp = None
    built_ok = built.is_file() and built.read_text().strip() == version
    if stamp == digest and built_ok and not missing_visdom_assets(static, manifest):
        say("visdom's front-end files are installed")
        return

    # Not marked as built while incomplete: a half-installed set must not look finished.
    VISDOM_STAMP.unlink(missing_ok=True)
    built.unlink(missing_ok=True)
    started = time.monotonic()
    packages = manifest["packages"]
    say(f"visdom's front-end files: {len(packages)} npm packages from {_registry()} (about 25 MB)")
    for package_spec in packages:
        for _src, dst in package_spec["files"]:
            if dst.startswith("/") or ".." in Path(dst).parts:
                raise StepFailed(f"tools/visdom_assets.json: {dst!r} is not a path inside static/")

    def install(spec: dict) -> None:
        files = npm_package_files(spec["name"], spec["version"], [src for src, _dst in spec["files"]])
        for src, dst in spec["files"]:
            _write(static / dst, files[src])

    hint = (f" Check that {_registry()} is reachable (behind a proxy set HTTPS_PROXY, or set "
            "npm_config_registry to a mirror) and rerun make setup.")
    with ThreadPoolExecutor(max_workers=6) as pool:
        try:
            for future in [pool.submit(install, spec) for spec in packages]:
                future.result()
        except StepFailed as exc:
            raise StepFailed(f"visdom's front-end files: {exc}.{hint}") from None
        except (tarfile.TarError, OSError) as exc:
            raise StepFailed(f"visdom's front-end files: {exc!r}; rerun make setup") from None
    built.write_text(version)
    VISDOM_STAMP.write_text(digest + "\n")
    say(f"visdom's front-end files are installed in {static} "
        f"({time.monotonic() - started:.0f} s). Next: make lab")


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
        ensure_visdom_assets()
    except StepFailed as exc:
        say(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        say("interrupted; nothing is marked as installed, rerun to finish")
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
