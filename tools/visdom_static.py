"""visdom's front-end files (JavaScript, CSS, fonts, MathJax), installed from the npm registry.

visdom's server fetches these from CDNs the first time it starts and exits when it
cannot (offline). It skips that when every file exists and ``static/version.built``
holds the visdom version. The same releases are on the npm registry, so the set-up
installs them from there, as listed in ``tools/visdom_assets.json``, each tarball
checked against the registry's sha512; a stamp in the venv covers that list.

Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import tarfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setup_steps import ROOT, StepFailed, say

VISDOM_ASSETS = ROOT / "tools" / "visdom_assets.json"
NPM_REGISTRY = "https://registry.npmjs.org"
DOWNLOAD_TIMEOUT_S = 60


def visdom_package_dir(venv: Path) -> Path | None:
    """``<venv>/lib/python3.X/site-packages/visdom`` (found without running Python)."""
    for pattern in ("lib/python3*/site-packages/visdom", "Lib/site-packages/visdom"):
        for path in sorted(venv.glob(pattern)):
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


def ensure_visdom_assets(venv: Path) -> None:
    """Install the front-end files into ``<venv>``'s visdom (skipped when its stamp matches)."""
    package = visdom_package_dir(venv)
    if package is None:
        raise StepFailed(f"visdom is not installed in {venv}; delete it and rerun.")
    stamp_file = venv / ".minikernel-visdom-stamp"
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
        stamp = stamp_file.read_text().split()[0]
    except (OSError, IndexError):
        stamp = None
    built_ok = built.is_file() and built.read_text().strip() == version
    if stamp == digest and built_ok and not missing_visdom_assets(static, manifest):
        say("visdom's front-end files are installed")
        return

    # Not marked as built while incomplete: a half-installed set must not look finished.
    stamp_file.unlink(missing_ok=True)
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
    stamp_file.write_text(digest + "\n")
    say(f"visdom's front-end files are installed in {static} "
        f"({time.monotonic() - started:.0f} s). Next: make lab")
