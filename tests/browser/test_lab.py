"""JupyterLab in headless Chromium: notebooks run top to bottom and the stride
explorer draws and reacts to its controls.

Run with ``MINIKERNEL_SOLUTIONS=all python -m pytest tests/browser -m browser``
(the server gets ``MINIKERNEL_SOLUTIONS=all`` itself). Screenshots of the
explorer before and after each interaction go to ``tests/browser/artifacts/``.

Known flake (see the course notes): the toolbar can show the kernel idle before
its websocket is connected, and Run All then runs nothing. So we wait for a frame
on the ``/api/kernels/`` websocket and retry Run All until a prompt turns
``[*]``/``[n]``.
"""
from __future__ import annotations

import json
import re
import secrets
import time
from pathlib import Path

import pytest

from .conftest import ARTIFACTS, SCRATCH, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

CHAPTER = "01_strides.ipynb"
RUN_MENU = ".lm-MenuBar-itemLabel:text-is('Run')"
FILE_MENU = ".lm-MenuBar-itemLabel:text-is('File')"
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in the visible tab
PROMPTS = f"{NOTEBOOK} .jp-CodeCell .jp-InputArea-prompt"


class Deadline:
    """One time budget for a whole test, so the steps below cannot add up past it."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self, cap: float) -> float:
        """Milliseconds left, at most ``cap`` seconds (Playwright takes ms)."""
        return max(min(cap, self.end - time.monotonic()), 0.1) * 1000

    def wait(self, page, what: str, check, cap: float = 60, every_ms: int = 250):
        """Poll ``check()`` until it returns something truthy; fail naming ``what``."""
        stop = time.monotonic() + self.left(cap) / 1000
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() > stop:
                raise AssertionError(f"timed out waiting for {what}")
            page.wait_for_timeout(every_ms)


def open_notebook(browser, lab, name: str, deadline: Deadline):
    """Open ``name`` in JupyterLab; return (context, page) once its kernel websocket talks.

    Each call uses a fresh named workspace, so no tab from an earlier test is restored.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    frames: list[str] = []

    def on_websocket(ws):
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", lambda payload: frames.append(ws.url))

    page.on("websocket", on_websocket)
    workspace = f"test-{secrets.token_hex(4)}"
    page.goto(f"{lab.url}lab/workspaces/{workspace}/tree/{name}?token={lab.token}", timeout=deadline.left(60))
    page.wait_for_selector(PROMPTS, timeout=deadline.left(60))
    deadline.wait(page, "a frame on the kernel websocket", lambda: frames, cap=60)
    return context, page


def prompts(page) -> list[str]:
    return page.locator(PROMPTS).evaluate_all("els => els.map(e => e.textContent.trim())")


def run_all(page, deadline: Deadline) -> float:
    """Run > Run All Cells (retried if nothing starts); wait until no cell is queued."""
    started = time.monotonic()
    for attempt in range(3):
        page.click(RUN_MENU, timeout=deadline.left(20))
        page.click("li.lm-Menu-item[data-command='runmenu:run-all']", timeout=deadline.left(20))
        try:
            deadline.wait(page, "Run All to start", lambda: any(re.search(r"\[(\*|\d+)\]", p)
                                                                 for p in prompts(page)), cap=15)
            break
        except AssertionError:
            if attempt == 2:
                raise
            print(f"Run All started nothing; retrying ({attempt + 2}/3)")
    deadline.wait(page, "every queued cell to finish",
                  lambda: not any("*" in p for p in prompts(page)), cap=150, every_ms=500)
    return time.monotonic() - started


def saved_problems(page, lab, name: str, deadline: Deadline) -> list[str]:
    """Save the notebook, then list code cells that did not run or raised unexpectedly.

    Errors are allowed only where the notebook says so: the ``raises-exception``
    tag (which JupyterLab honours) or nbval's ``NBVAL_RAISES_EXCEPTION`` comment.
    """
    path: Path = lab.root / name
    before = path.stat().st_mtime_ns
    page.click(FILE_MENU, timeout=deadline.left(20))
    page.click("li.lm-Menu-item[data-command='docmanager:save']", timeout=deadline.left(20))

    def saved():
        try:
            return path.stat().st_mtime_ns != before and json.loads(path.read_text())
        except ValueError:  # caught mid-write
            return None

    notebook = deadline.wait(page, f"{name} to be saved", saved, cap=30)
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    problems = []
    for n, cell in enumerate(cells, 1):
        source = "".join(cell["source"])
        where = f"code cell {n} ({source.splitlines()[0][:60] if source else 'empty'!r})"
        allowed = "raises-exception" in cell["metadata"].get("tags", []) or "NBVAL_RAISES_EXCEPTION" in source
        if cell["execution_count"] is None and source.strip():
            problems.append(f"{where} did not run")
        for out in cell["outputs"]:
            if out["output_type"] == "error" and not allowed:
                problems.append(f"{where} raised {out['ename']}: {out['evalue']}")
    return problems


def drawn(explorer) -> dict[str, int]:
    """{data-index: data-pos} of the logical cells the explorer draws right now."""
    pairs = explorer.locator(".mk-cell").evaluate_all(
        "els => els.map(e => [e.dataset.index, Number(e.dataset.pos)])")
    return dict(pairs)


def play_with_explorer(page, prefix: str, deadline: Deadline) -> None:
    """Pick another operation, switch to as_strided, nudge the offset; the picture follows."""
    explorer = page.locator(f"{NOTEBOOK} .mk-stride-explorer").first
    explorer.locator(".mk-cell").first.wait_for(timeout=deadline.left(30))
    explorer.scroll_into_view_if_needed()
    assert not explorer.locator(".mk-error, .mk-warn, .mk-todo").count(), explorer.inner_text()
    start = drawn(explorer)
    assert start, "the stride explorer drew no cells"
    explorer.screenshot(path=ARTIFACTS / f"{prefix}-1-before.png")

    explorer.locator(".mk-op select").select_option(label="x[1:]")
    sliced = deadline.wait(page, "the picture to follow the operation dropdown",
                           lambda: (d := drawn(explorer)) and d != start and d, cap=20)
    assert "[1:]" in explorer.locator(".mk-call").inner_text()
    explorer.screenshot(path=ARTIFACTS / f"{prefix}-2-sliced.png")

    explorer.locator("button", has_text="as_strided").click(timeout=deadline.left(20))
    deadline.wait(page, "as_strided mode to show the same view", lambda: "as_strided" in
                  explorer.locator(".mk-call").inner_text() and drawn(explorer) == sliced, cap=20)
    handle = explorer.locator(".mk-offset .noUi-handle")
    handle.focus(timeout=deadline.left(20))
    handle.press("ArrowLeft")
    shifted = {i: p - 1 for i, p in sliced.items()}  # one step down in offset
    deadline.wait(page, "the offset slider (ArrowLeft) to move every cell one position down",
                  lambda: drawn(explorer) == shifted, cap=20)
    explorer.screenshot(path=ARTIFACTS / f"{prefix}-3-offset.png")


def _run_notebook_and_explorer(browser, lab, name: str, prefix: str) -> None:
    require_chromium(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    deadline = Deadline(170)
    context, page = open_notebook(browser, lab, name, deadline)
    try:
        seconds = run_all(page, deadline)
        problems = saved_problems(page, lab, name, deadline)
        assert not problems, (f"{name} after Run All ({seconds:.1f} s):\n" + "\n".join(problems) + "\n(Run All"
                              " stops at an error; tag cells that raise on purpose `raises-exception`)")
        play_with_explorer(page, prefix, deadline)
    except BaseException:
        page.screenshot(path=ARTIFACTS / f"{prefix}-failure.png", full_page=True)
        print(f"server log:\n{lab.log_tail()}")
        raise
    finally:
        context.close()


def test_stride_explorer_reacts_in_lab(lab, browser):
    """A one-cell notebook: the explorer renders in JupyterLab and redraws on input."""
    _run_notebook_and_explorer(browser, lab, SCRATCH, "scratch")


def test_chapter_01_runs_and_its_explorer_reacts(lab, browser):
    """Chapter 01 runs top to bottom with the references, and its explorer works."""
    require_chromium(browser)
    if not (lab.root / CHAPTER).exists():
        pytest.fail(f"chapters/{CHAPTER} is missing (run `make notebooks`)", pytrace=False)
    _run_notebook_and_explorer(browser, lab, CHAPTER, "01_strides")
