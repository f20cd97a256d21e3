"""The learner's whole loop in the lab, in headless Chromium, in student mode.

A temporary copy of the course is served by its own ``python -m minikernel lab``
(so the checkout's files are never edited). In the learner's copy of chapter 01:
Run All; exercise 1.1's box links to the stub, and its "Grade 1.1 here" button grades
it in place (TODO); the link opens ``minikernel/strides.py`` in JupyterLab's editor;
the reference's body is typed in place of the stub's ``raise`` and saved; re-running the exercise's cells (no kernel restart) shows the
answer instead of the box, and the check prints the learner's answers beside torch's;
``mk.grade("1.1")`` in a new cell shows PASS. Screenshots go to
``tests/browser/artifacts/`` (``loop-*.png``).
"""
from __future__ import annotations

import inspect
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

from .conftest import ARTIFACTS, REPO, _free_port, require_chromium
from .test_lab import NOTEBOOK, Deadline, open_notebook, run_all

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420), pytest.mark.own_mode]

STUB_1_1 = 'raise NotImplementedError("exercise 1.1 (contiguous_strides) is not implemented yet")'


def reference_body() -> str:
    """solutions.strides.contiguous_strides's body, indented as in the stub's file."""
    from solutions import strides as reference

    lines = inspect.getsource(reference.contiguous_strides).splitlines()
    body = textwrap.dedent("\n".join(lines[1:]))
    return textwrap.indent(body, "    ").lstrip()  # the first line goes where the stub's raise starts


@pytest.fixture(scope="module")
def learner_lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("learner-loop")
    course = base / "course"
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "artifacts", "wrong", "conformance",
                                    "mutation")
    for name in ("chapters", "minikernel", "solutions", "widgets", "tests"):
        shutil.copytree(REPO / name, course / name, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", course / "pyproject.toml")
    env = dict(os.environ, MINIKERNEL_SOLUTIONS="", PYTHONPATH=str(course),
               JUPYTER_RUNTIME_DIR=str(base / "rt"), JUPYTER_CONFIG_DIR=str(base / "config"),
               JUPYTER_DATA_DIR=str(base / "data"), JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"), IPYTHONDIR=str(base / "ipython"))
    for name in ("JUPYTER_TOKEN", "MINIKERNEL_OVERRIDE", "MINIKERNEL_VISDOM_URL"):
        env.pop(name, None)
    log = base / "lab.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "minikernel", "lab", "--port", str(_free_port()),
                                    "--no-dashboard"], cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        pattern = r"(http://\S+/)lab/tree/my-notebooks/01_strides\.ipynb\?token=(\w+)"
        while not (found := re.search(pattern, log.read_text(errors="replace"))):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the lab did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)
        yield SimpleNamespace(url=found[1], token=found[2], root=course, log=log,
                              log_tail=lambda: log.read_text(errors="replace")[-3000:])
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def code_cell(page, text: str):
    return page.locator(f"{NOTEBOOK} .jp-CodeCell", has=page.locator(".jp-InputArea", has_text=text)).first


def run_cell(page, cell, deadline: Deadline) -> None:
    """Run one cell (click its editor, Shift+Enter) and wait for its prompt to show a number."""
    cell.locator(".jp-InputArea-editor").click()
    before = cell.locator(".jp-InputArea-prompt").inner_text()
    page.keyboard.press("Shift+Enter")
    deadline.wait(page, "the cell to run", lambda: re.search(
        r"\[\d+\]", p := cell.locator(".jp-InputArea-prompt").inner_text()) and p != before, cap=120)


def test_open_the_stub_from_the_box_write_it_save_rerun_and_grade(learner_lab, browser):
    require_chromium(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    deadline = Deadline(400)
    stub_file = learner_lab.root / "minikernel" / "strides.py"
    context, page = open_notebook(browser, learner_lab, "my-notebooks/01_strides.ipynb", deadline)
    try:
        run_all(page, deadline)
        ask = code_cell(page, "S.contiguous_strides((2, 3, 4))")
        box = ask.locator(".mk-todo-box", has_text="Exercise 1.1")
        box.wait_for(timeout=deadline.left(30))
        box.scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "loop-1-box.png")

        # the box's second link: grading this exercise here, before any code is written
        ask.locator("button.mk-grade-here", has_text="Grade 1.1 here").click()
        deadline.wait(page, "the button's grade table", lambda: re.search(
            r"1\.1\s+contiguous_strides\s+TODO", ask.locator(".jp-Cell-outputArea").inner_text()), cap=200, every_ms=1000)

        box.locator("a.mk-open-stub").click()
        editor = page.locator(".jp-FileEditor:not(.lm-mod-hidden)").first
        editor.wait_for(timeout=deadline.left(30))
        assert page.locator(".lm-TabBar-tab.lm-mod-current", has_text="strides.py").count()
        line = editor.locator(".cm-line", has_text=STUB_1_1)
        line.wait_for(timeout=deadline.left(30))
        line.click()
        page.keyboard.press("End")
        page.keyboard.press("Shift+Home")  # to the end of the indentation
        page.keyboard.insert_text(reference_body())
        page.screenshot(path=ARTIFACTS / "loop-2-editor.png")
        page.keyboard.press("Control+s")
        deadline.wait(page, "strides.py to be saved with the new body",
                      lambda: STUB_1_1 not in stub_file.read_text() and "max(shape[d + 1], 1)" in stub_file.read_text(),
                      cap=30)
        compile(stub_file.read_text(), str(stub_file), "exec")  # typed as Python, indentation kept

        page.locator(".lm-TabBar-tab", has_text="01_strides.ipynb").first.click()
        run_cell(page, ask, deadline)
        deadline.wait(page, "the answer instead of the box",
                      lambda: "(12, 4, 1)" in ask.locator(".jp-Cell-outputArea").inner_text(), cap=60)
        assert not ask.locator(".mk-todo-box").count()
        assert "Reloaded your saved minikernel/strides.py: contiguous_strides." in ask.inner_text()
        check = code_cell(page, "agree(S.contiguous_strides")
        run_cell(page, check, deadline)
        shown = check.locator(".jp-OutputArea").inner_text()
        assert re.search(r"\(2, 3, 4\)\s+yours: \(12, 4, 1\)\s+torch: \(12, 4, 1\)\s+ok", shown), shown
        assert "5/5 cases agree with torch" in shown and not check.locator(".mk-todo-box").count()
        check.scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "loop-3-rerun.png")

        page.keyboard.press("Escape")
        page.keyboard.press("b")  # a new cell below the check
        page.keyboard.press("Enter")
        page.keyboard.insert_text('mk.grade("1.1")')
        page.keyboard.press("Shift+Enter")
        graded = page.locator(f"{NOTEBOOK} .jp-CodeCell", has=page.locator(".jp-InputArea",
                                                                              has_text='mk.grade("1.1")')).first
        deadline.wait(page, "the grade table", lambda: "1.1" in graded.locator(".jp-OutputArea").inner_text()
                      and re.search(r"PASS|FAIL|TODO|BLOCKED", graded.locator(".jp-OutputArea").inner_text()),
                      cap=200, every_ms=1000)
        table = graded.locator(".jp-OutputArea").inner_text()
        assert re.search(r"1\.1\s+contiguous_strides\s+PASS", table), table
        graded.scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "loop-4-graded.png")
    except BaseException:
        page.screenshot(path=ARTIFACTS / "loop-failure.png", full_page=True)
        print(f"lab log:\n{learner_lab.log_tail()}")
        raise
    finally:
        context.close()
