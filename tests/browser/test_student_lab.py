"""A new learner's first Run All, in JupyterLab in headless Chromium.

JupyterLab runs chapter 01 with no exercise written (``MINIKERNEL_SOLUTIONS``
empty): Run All must reach the last cell, every unfinished exercise must show its
box and no cell an error. Screenshots of the chapter before and after running go
to ``tests/browser/artifacts/`` (``01-student-before-run.png``,
``01-student-after-run.png``).
"""
from __future__ import annotations

import pytest

from .conftest import ARTIFACTS, require_chromium
from .test_lab import (
    CHAPTER,
    NOTEBOOK,
    Deadline,
    open_notebook,
    run_all,
    saved_problems,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]


def test_run_all_in_student_mode_reaches_the_last_cell_of_chapter_01(student_lab, browser):
    require_chromium(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    deadline = Deadline(230)
    context, page = open_notebook(browser, student_lab, CHAPTER, deadline)
    try:
        page.screenshot(path=ARTIFACTS / "01-student-before-run.png")
        # before anything runs (an untrusted notebook: no widget view), the stride
        # explorer's stored still is drawn, not a repr or a widget error
        still = page.locator(f"{NOTEBOOK} .jp-OutputArea-output", has_text="a still of the stride explorer")
        live = page.locator(f"{NOTEBOOK} .mk-stride-explorer")
        deadline.wait(page, "the stride explorer's still (or its saved widget)",
                      lambda: still.count() or live.count(), cap=30)
        (still if still.count() else live).first.scroll_into_view_if_needed()
        assert not page.locator(f"{NOTEBOOK} .jp-OutputArea-output", has_text="Error displaying widget").count()
        assert not page.locator(f"{NOTEBOOK} .jp-OutputArea-output", has_text="StrideExplorer(").count()
        page.screenshot(path=ARTIFACTS / "01-student-before-run-explorer.png")
        seconds = run_all(page, deadline)
        problems = saved_problems(page, student_lab, CHAPTER, deadline)
        assert not problems, f"{CHAPTER} after Run All in student mode ({seconds:.1f} s):\n" + "\n".join(problems)
        boxes = page.locator(f"{NOTEBOOK} .jp-OutputArea-output", has_text="is not written yet")
        assert boxes.count() >= 5, f"{boxes.count()} exercise boxes shown"
        assert not page.locator(f"{NOTEBOOK} .jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']",
                                has_text="Traceback").count()
        boxes.first.scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "01-student-after-run.png")
    except BaseException:
        page.screenshot(path=ARTIFACTS / "01-student-failure.png", full_page=True)
        print(f"server log:\n{student_lab.log_tail()}")
        raise
    finally:
        context.close()
