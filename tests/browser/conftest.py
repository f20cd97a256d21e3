"""Fixtures for the browser tests: a real JupyterLab server and headless Chromium.

``lab`` (and ``student_lab``, the same with no reference switched on) serves a
temporary copy of ``chapters/`` (plus a one-cell scratch notebook
with the stride explorer) from ``python -m jupyterlab`` on a free 127.0.0.1 port,
with a random token, its own ``MINIKERNEL_SOLUTIONS`` and its own runtime, config,
settings and workspace directories, so nothing of the user's Jupyter set-up is
read or written. It is stopped (SIGTERM, then SIGKILL) however the tests end.

``browser`` is Playwright's Chromium driving Debian's ``/usr/bin/chromium``
(never ``playwright install``). When that binary is missing it is None and each
test fails with one line saying what to install: a skipped browser test must
never look like a passing one.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
SCRATCH = "_stride_explorer_scratch.ipynb"
EXPLORER_CELL = "# NBVAL_IGNORE_OUTPUT\nfrom widgets import stride_explorer\nstride_explorer()"
#: JupyterLab user settings: every cell in the DOM, no news or update checks, no toasts.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
}


@dataclass
class Lab:
    """A running JupyterLab: its base URL, token, served directory and log file."""

    url: str
    token: str
    root: Path
    log: Path
    process: subprocess.Popen

    def log_tail(self, lines: int = 25) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(f"{self.url}api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read()
        return json.loads(body) if body else None


def require_chromium(browser) -> None:
    """Fail (not skip) with one line when Chromium is missing."""
    if browser is None:
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install -y "
                    "--no-install-recommends chromium fonts-dejavu-core` (or `python3 "
                    "tools/bootstrap.py --system`); never `playwright install`.", pytrace=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(process: subprocess.Popen, lab: Lab | None) -> None:
    """Shut the kernels down, then SIGTERM the server's process group, SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    try:
        for kernel in (lab.api("kernels") if lab else []):
            lab.api(f"kernels/{kernel['id']}", method="DELETE")
    except Exception:  # noqa: BLE001 - best effort; the signals below still stop the server
        pass
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)  # the server was started in its own session
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="session")
def lab(tmp_path_factory) -> Lab:
    """JupyterLab with every exercise's reference (``MINIKERNEL_SOLUTIONS=all``), one for
    every module that asks (each test opens its own notebook)."""
    yield from _serve_lab(tmp_path_factory.mktemp("jupyterlab"), "all")


@pytest.fixture(scope="session")
def student_lab(tmp_path_factory) -> Lab:
    """JupyterLab as a new learner has it: no exercise written (``MINIKERNEL_SOLUTIONS`` empty)."""
    yield from _serve_lab(tmp_path_factory.mktemp("jupyterlab-student"), "")


def _serve_lab(base: Path, solutions: str):
    root = base / "chapters"
    shutil.copytree(REPO / "chapters", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(EXPLORER_CELL)])
    scratch.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(scratch, root / SCRATCH)
    for name, values in SETTINGS.items():
        path = base / "settings" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(os.environ, MINIKERNEL_SOLUTIONS=solutions,
               JUPYTER_RUNTIME_DIR=str(base / "runtime"), JUPYTER_CONFIG_DIR=str(base / "config"),
               JUPYTER_DATA_DIR=str(base / "data"), JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"), IPYTHONDIR=str(base / "ipython"))
    env.pop("JUPYTER_TOKEN", None)
    port, token = _free_port(), secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}"] + (["--allow-root"] if os.geteuid() == 0 else [])
    log = base / "jupyterlab.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    server = Lab(f"http://127.0.0.1:{port}/", token, root, log, process)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"jupyter lab exited with code {process.returncode}:\n{server.log_tail()}")
            try:
                server.api("status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not answer within 60 s:\n{server.log_tail()}")
                time.sleep(0.2)
        yield server
    finally:
        _stop(process, server)


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        yield None
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
