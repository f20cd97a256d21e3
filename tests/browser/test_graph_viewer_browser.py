"""JupyterLab in headless Chromium: the chapter 03 graph viewer draws its two graphs and steps.

Chapter 03's notebook is used once it shows the viewer (``GraphViewer`` or
``graph_viewer`` in ``chapters/03_autograd_graphs.ipynb``); until then a one-cell
notebook written into the served directory stands in for it. Run All, then: the
viewer's torch and minikernel panes each hold an SVG graph, one node is active,
and pressing ArrowRight on the step slider makes the next node of the step table
the active one. Screenshots go to ``tests/browser/artifacts/graph_viewer-*.png``.

Run with ``MINIKERNEL_SOLUTIONS=all python -m pytest tests/browser -m browser``
(the server runs with ``MINIKERNEL_SOLUTIONS=all``).
"""
from __future__ import annotations

import nbformat
import pytest

from .conftest import ARTIFACTS, require_chromium
from .test_lab import NOTEBOOK, Deadline, open_notebook, run_all, saved_problems

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

CHAPTER = "03_autograd_graphs.ipynb"
SCRATCH = "_graph_viewer_scratch.ipynb"
VIEWER_CELL = """# NBVAL_IGNORE_OUTPUT
import torch
import minikernel
from minikernel.autograd import functions as F
from widgets import GraphViewer

a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
b = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
ma = minikernel.Tensor.from_torch(a.detach().clone()).requires_grad_()
mb = minikernel.Tensor.from_torch(b.detach().clone()).requires_grad_()
GraphViewer((a * b).exp().sum() + (a * a).sum(), F.add(F.sum(F.exp(F.mul(ma, mb))), F.sum(F.mul(ma, ma))),
            params={"a": (a, ma), "b": (b, mb)})"""


def notebook_to_open(lab) -> str:
    """Chapter 03 if it shows the viewer, else a scratch notebook written next to it."""
    chapter = lab.root / CHAPTER
    if chapter.exists() and any(word in chapter.read_text() for word in ("GraphViewer", "graph_viewer")):
        return CHAPTER
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(VIEWER_CELL)])
    scratch.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(scratch, lab.root / SCRATCH)
    return SCRATCH


def page_state(viewer) -> dict:
    """What the viewer shows now: per pane the SVG's node count and active node, and the step table."""
    return viewer.evaluate("""v => {
        const pane = side => {
            const svg = v.querySelector(`.mk-graph[data-side="${side}"] svg.mk-graph-svg`);
            const active = svg && svg.querySelector('g.mk-node[data-state="active"]');
            return svg ? {nodes: Number(svg.dataset.nodes), drawn: svg.querySelectorAll('g.mk-node').length,
                          active: active ? active.dataset.name : null} : null;
        };
        const rows = [...v.querySelectorAll('tr.mk-step')];
        return {torch: pane('torch'), minikernel: pane('minikernel'),
                steps: rows.map(r => r.dataset.torch), matches: rows.map(r => r.dataset.match),
                current: rows.findIndex(r => r.dataset.current === '1'),
                notes: [...v.querySelectorAll('.mk-todo, .mk-error, .mk-warn')].map(e => e.textContent)};
    }""")


def test_graph_viewer_renders_svg_and_steps_in_lab(lab, browser):
    require_chromium(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    name = notebook_to_open(lab)
    print(f"notebook: {name}")
    deadline = Deadline(230)
    context, page = open_notebook(browser, lab, name, deadline)
    try:
        seconds = run_all(page, deadline)
        problems = saved_problems(page, lab, name, deadline)
        assert not problems, f"{name} after Run All ({seconds:.1f} s):\n" + "\n".join(problems)
        viewer = page.locator(f"{NOTEBOOK} .mk-graph-viewer").first
        viewer.locator("svg.mk-graph-svg").first.wait_for(timeout=deadline.left(30))
        viewer.scroll_into_view_if_needed()
        start = deadline.wait(page, "both panes to draw their graph",
                              lambda: (s := page_state(viewer))["torch"] and s["minikernel"] and s)
        assert not start["notes"], start["notes"]  # references on: no exercise left to finish
        for side in ("torch", "minikernel"):
            assert start[side]["drawn"] == start[side]["nodes"] > 0
            assert start[side]["active"] == start["steps"][0]
        assert start["current"] == 0 and len(start["steps"]) > 2 and set(start["matches"]) == {"1"}
        viewer.screenshot(path=ARTIFACTS / "graph_viewer-1-first-step.png")

        handle = viewer.locator(".mk-step-slider .noUi-handle")
        handle.focus(timeout=deadline.left(20))
        handle.press("ArrowRight")
        moved = deadline.wait(page, "ArrowRight on the slider to make step 2's node active",
                              lambda: (s := page_state(viewer))["current"] == 1 and s, cap=20)
        assert moved["torch"]["active"] == moved["minikernel"]["active"] == start["steps"][1]
        viewer.screenshot(path=ARTIFACTS / "graph_viewer-2-second-step.png")
    except BaseException:
        page.screenshot(path=ARTIFACTS / "graph_viewer-failure.png", full_page=True)
        print(f"server log:\n{lab.log_tail()}")
        raise
    finally:
        context.close()
