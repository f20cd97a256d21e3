"""``python -m minikernel lab`` as a learner starts it: the course folder served
(chapters and the files to write), the printed URL opening chapter 01, a tidy file
browser, no news prompt, and the dashboard server on the port asked for, with each
chapter's dashboard page printed.

It runs the real launcher on the repository (nothing is executed or saved there; the
launcher makes the learner's copies in ``my-notebooks/``, which git ignores), with Jupyter's runtime, config, data and settings directories in
a temporary directory. A screenshot of the lab goes to ``tests/browser/artifacts/``.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from minikernel.course import dashboard_server

from .conftest import ARTIFACTS, REPO, _free_port, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def course_lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("course-lab")
    port, dashboard_port = _free_port(), _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(base / "runtime"), JUPYTER_CONFIG_DIR=str(base / "config"),
               JUPYTER_DATA_DIR=str(base / "data"), JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"), IPYTHONDIR=str(base / "ipython"))
    for name in ("JUPYTER_TOKEN", dashboard_server.URL_VARIABLE):
        env.pop(name, None)
    log = base / "lab.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "minikernel", "lab", "--port", str(port), "--dashboard-port", str(dashboard_port)],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (found := re.search(r"(http://\S+/)lab/tree/my-notebooks/01_strides\.ipynb\?token=(\w+)",
                                      log.read_text(errors="replace"))):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the lab did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)
        yield found[1], found[2], dashboard_port, log
    finally:
        os.killpg(process.pid, signal.SIGINT)  # the launcher stops JupyterLab and visdom
        try:
            process.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _get(url: str, token: str):
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def test_the_dashboard_runs_on_the_port_asked_for_and_its_chapter_pages_are_printed(course_lab):
    _url, _token, dashboard_port, log = course_lab
    assert dashboard_server.is_visdom(f"http://127.0.0.1:{dashboard_port}")
    printed = log.read_text()
    assert f"Live dashboards: http://127.0.0.1:{dashboard_port}" in printed
    assert f"chapter 04 (hooks): http://127.0.0.1:{dashboard_port}/env/ch04" in printed, printed[-3000:]


def test_the_file_browser_lists_the_learners_notebooks_not_the_courses(course_lab):
    base, token, _port, _log = course_lab
    listing = json.loads(_get(base + "api/contents/my-notebooks", token))
    names = {item["name"] for item in listing["content"]}
    assert "01_strides.ipynb" in names
    assert not [n for n in names if re.fullmatch(r"\d\d_\w+\.py", n)], sorted(names)
    copy = json.loads(_get(base + "api/contents/my-notebooks/01_strides.ipynb", token))["content"]
    assert "jupytext" not in copy["metadata"]  # saving it writes no .py twin


def test_the_files_to_write_are_in_the_lab(course_lab):
    """The lab's root is the course: the exercise box's link to minikernel/strides.py opens."""
    base, token, _port, _log = course_lab
    root = {item["name"] for item in json.loads(_get(base + "api/contents/", token))["content"]}
    assert {"my-notebooks", "minikernel"} <= root and "chapters" not in root, sorted(root)
    # what JupyterLab's editor asks for (jupytext would offer the .py as a notebook otherwise)
    stub = json.loads(_get(base + "api/contents/minikernel/strides.py?type=file&format=text", token))  # 200 or raises
    assert stub["type"] == "file" and "def index_to_position(" in stub["content"]


def test_no_news_prompt(course_lab, browser):
    require_chromium(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    base, token, _port, log = course_lab
    settings = json.loads(_get(base + "lab/api/settings/@jupyterlab/apputils-extension:notification", token))
    # overrides.json becomes the schema's defaults
    assert settings["schema"]["properties"]["fetchNews"]["default"] == "false"
    assert settings["schema"]["properties"]["checkForUpdates"]["default"] is False
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    frames: list[str] = []
    page.on("websocket", lambda ws: "/api/kernels/" in ws.url and ws.on("framereceived", lambda f: frames.append(f)))
    try:
        page.goto(f"{base}lab/tree/my-notebooks/01_strides.ipynb?token={token}", timeout=60_000)
        page.wait_for_selector(".jp-DirListing-item", timeout=60_000)
        page.wait_for_timeout(3000)  # the news prompt, when on, shows up a moment after start
        page.screenshot(path=ARTIFACTS / "course-lab.png")
        assert not page.get_by_text("official Jupyter news").count()
        listed = page.locator(".jp-DirListing-itemName").all_inner_texts()
        assert "01_strides.ipynb" in listed and "01_strides.py" not in listed, listed
        for _ in range(120):  # the kernel started and its websocket talks: what the server logs then
            if frames:
                break
            page.wait_for_timeout(500)
        assert frames, "no kernel websocket frame within 60 s"
        page.wait_for_timeout(2000)
    finally:
        context.close()
    assert_quiet(log.read_text(errors="replace"))


#: What the terminal of ``make lab`` must not show: the server's routine log and
#: warnings a learner can do nothing about (the course's notebooks are trusted, kernels
#: use Unix sockets, tornado's note on ping settings is silenced).
NOISE = [r"^\[I \d", "Skipped non-installed server", "is not trusted", "without encryption",
         "websocket_ping_timeout", "It's Alive"]


def assert_quiet(printed: str) -> None:
    found = [line for line in printed.splitlines() if any(re.search(p, line) for p in NOISE)]
    assert not found, "the lab's terminal shows:\n" + "\n".join(found)
    assert printed.count("minikernel is ready.") == 1 and "Start with my-notebooks/01_strides.ipynb" in printed
