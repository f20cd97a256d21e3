"""The Debian packages the tests need: chromium (browser tests), graphviz (dot), fonts, and
bubblewrap (the sandbox `gradebook` grades submissions in).

Installed with apt-get when running as root; otherwise the step says what to install.
Standard library only.
"""

from __future__ import annotations

import os
import shutil
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
