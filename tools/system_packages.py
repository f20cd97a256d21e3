"""The Debian packages the tests need: chromium (browser tests), graphviz (dot), fonts, and
bubblewrap (the sandbox `gradebook` grades submissions in).

Installed with apt-get when running as root; otherwise the step says what to install.

``make lab`` installs none of them, so the notebooks must run without them. The
notebook layers of ``make test`` run under a newcomer's ``PATH``:

    python3 tools/system_packages.py --newcomer-path -- COMMAND [ARGS...]

runs COMMAND with ``PATH`` replaced by one folder of links to every program on
``PATH`` except what ``make lab`` does not install: graphviz's programs (``dot``...),
Chromium, bubblewrap and C/C++ compilers. It prints one line naming what it hid. (Fonts
are not programs: matplotlib draws with its own, and the notebooks need no other.)

Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from setup_steps import StepFailed, run, say

CHROMIUM = Path("/usr/bin/chromium")
FONT_DIRS = (Path("/usr/share/fonts"), Path("/usr/local/share/fonts"))
# chromium's "Recommends" are not needed headless (sandbox: tests pass
# --no-sandbox; GPU: --disable-gpu), except fonts: without any font every glyph
# renders as a box. fonts-liberation (Arial/Times/Courier metrics) is one of
# chromium's recommends and matches the fonts web pages ask for.
FONT_PACKAGES = ("fonts-dejavu-core", "fonts-liberation")

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
    if shutil.which("bwrap") is None:
        missing.append("bubblewrap")
    return missing


def ensure_system() -> None:
    missing = missing_system_packages()
    if not missing:
        say("system packages present: /usr/bin/chromium, graphviz (dot), fonts, bubblewrap (bwrap)")
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


# ------------------------------------------------------------- a newcomer's PATH

#: Debian packages whose programs ``--system`` (or a developer's machine) may have and
#: ``make lab`` never installs; ``dpkg -L`` lists their programs where dpkg exists.
NEWCOMER_HIDDEN_PACKAGES = ("graphviz", "chromium", "bubblewrap")
#: The same programs by name, for machines without dpkg (and graphviz built by hand).
NEWCOMER_HIDDEN_NAMES = frozenset({
    "dot", "neato", "twopi", "circo", "fdp", "sfdp", "osage", "patchwork", "dot_builtins", "gvpr", "unflatten",
    "tred", "acyclic", "ccomps", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "bwrap",
})
#: C and C++ compilers (gcc-14, x86_64-linux-gnu-g++, clang++-19, ...): a newcomer may have none.
COMPILER = re.compile(r"(?:[A-Za-z0-9_]+-linux-gnu-)?(?:gcc|g\+\+|cc|c\+\+|cpp|clang|clang\+\+|clang-cpp)(?:-[0-9.]+)?")


def _package_programs(packages: tuple[str, ...] = NEWCOMER_HIDDEN_PACKAGES) -> set[str]:
    """Names of the programs that the Debian ``packages`` install (none where dpkg is missing)."""
    names: set[str] = set()
    if shutil.which("dpkg") is None:
        return names
    for package in packages:
        out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=False)
        for line in out.stdout.splitlines():
            path = Path(line.strip())
            if path.parent.name in ("bin", "sbin"):
                names.add(path.name)
    return names


def newcomer_hides(name: str, package_programs: set[str]) -> bool:
    """Whether a program of this name is one that ``make lab`` does not install."""
    return name in package_programs or name in NEWCOMER_HIDDEN_NAMES or COMPILER.fullmatch(name) is not None


def newcomer_path(shim: Path, path: str) -> list[str]:
    """Fill ``shim`` with links to the programs on ``path`` a newcomer has; return the names left out.

    The first program of each name on ``path`` wins, as it does for the shell.
    """
    shim.mkdir(parents=True, exist_ok=True)
    package_programs = _package_programs()
    seen: set[str] = set()
    hidden: list[str] = []
    for folder in path.split(os.pathsep):
        try:
            entries = sorted(os.scandir(folder or "."), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name in seen:
                continue
            try:
                if not entry.is_file() or not os.access(entry.path, os.X_OK):
                    continue
            except OSError:
                continue
            seen.add(entry.name)
            if newcomer_hides(entry.name, package_programs):
                hidden.append(entry.name)
            else:
                (shim / entry.name).symlink_to(os.path.abspath(entry.path))
    return sorted(hidden)


def summary(hidden: list[str]) -> str:
    """The hidden programs in one short line: compilers and the rest, the first few of each."""
    if not hidden:
        return "nothing (no graphviz, Chromium or C/C++ compiler is installed here)"
    compilers = [n for n in hidden if COMPILER.fullmatch(n)]
    others = [n for n in hidden if n not in compilers]
    parts = []
    for label, names in (("programs", others), ("C/C++ compilers", compilers)):
        if names:
            first = [n for n in ("dot", "chromium", "bwrap", "gcc", "g++", "cc") if n in names] or names[:3]
            more = len(names) - len(first)
            parts.append(f"{label} {', '.join(first)}" + (f" and {more} more" if more else ""))
    return "; ".join(parts)


def run_as_newcomer(command: list[str]) -> int:
    """Run ``command`` with a newcomer's PATH (module doc); its exit code."""
    if not command:
        raise StepFailed("--newcomer-path needs a command after --, e.g. "
                         "python3 tools/system_packages.py --newcomer-path -- make lab")
    with tempfile.TemporaryDirectory(prefix="minikernel-newcomer-path-") as tmp:
        shim = Path(tmp) / "bin"
        hidden = newcomer_path(shim, os.environ.get("PATH", os.defpath))
        print(f"[newcomer PATH] hidden, as after `make lab` alone: {summary(hidden)}", flush=True)
        try:
            return subprocess.run(command, env=dict(os.environ, PATH=str(shim)), check=False).returncode
        except OSError as exc:
            raise StepFailed(f"could not run {command[0]} ({exc.strerror}); give its full path") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 tools/system_packages.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--newcomer-path", action="store_true",
                        help="run the command after -- without graphviz, Chromium, bubblewrap and compilers on PATH")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        if args.newcomer_path:
            return run_as_newcomer(command)
        ensure_system()
    except StepFailed as exc:
        print(f"[setup] FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
