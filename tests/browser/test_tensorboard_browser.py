"""The dashboard's TensorBoard run in TensorBoard's own page, in headless Chromium.

A short training run is logged by a ``Dashboard(..., tensorboard=DIR)`` (scalars,
histograms, the graph), ``python -m minikernel tensorboard --logdir DIR`` serves
it on a free 127.0.0.1 port, and Chromium opens the page: the run
(``ch04/torch``) and its ``loss`` chart must show, and the Graphs tab must draw
the model's graph. Screenshots go to ``tests/browser/artifacts/``.

Run with ``python -m pytest tests/browser/test_tensorboard_browser.py -m browser``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest
import torch

from minikernel.course import dashboard_server
from tests.test_dashboard import free_port
from widgets.dashboard import Dashboard

from .conftest import ARTIFACTS, REPO, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

RUN = "ch04/torch"


def _get(url: str):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("tensorboard")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    x, y = torch.randn(64, 2), torch.randint(0, 3, (64,))
    dashboard = Dashboard(model, env="ch04", optimizer=opt, tensorboard=logdir, live=False, every=5,
                          connect_timeout=0.05)
    for step in range(30):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        dashboard.log(step, run="torch", loss=loss.item())
        opt.step()
    dashboard.add_graph(x, run="torch")
    dashboard.close()

    port, log = free_port(), logdir / "tensorboard.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "minikernel", "tensorboard", "--logdir", str(logdir), "--port", str(port)],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if RUN in _get(f"{url}/data/runs"):
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"tensorboard did not list the run {RUN}:\n{log.read_text(errors='replace')}")
            time.sleep(0.5)
        yield url, log
    finally:
        dashboard_server.stop_server(process)


def test_the_run_and_its_loss_show_in_tensorboards_page(board, browser):
    require_chromium(browser)
    url, log = board
    ARTIFACTS.mkdir(exist_ok=True)
    # TensorBoard's own API first: the loss tag with its 30 points is in the run.
    tags = _get(f"{url}/data/plugin/scalars/tags")
    assert "loss" in tags[RUN]
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{url}/#scalars", wait_until="domcontentloaded")
        page.get_by_text(RUN).first.wait_for(timeout=60_000)
        page.get_by_text("loss", exact=True).first.wait_for(timeout=60_000)
        page.wait_for_function("() => document.querySelectorAll('canvas, svg').length > 0", timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "tensorboard-scalars.png"))
        page.goto(f"{url}/#graphs", wait_until="domcontentloaded")
        # the graph view draws the traced Linear layers as nodes of its SVG
        page.wait_for_selector("svg .node", timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "tensorboard-graph.png"))
    finally:
        page.close()
    assert "Traceback" not in log.read_text(errors="replace")
