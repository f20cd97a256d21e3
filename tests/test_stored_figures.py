"""Chapter 03 without graphviz: each picture cell shows the stored drawing under a one-line note.

The drawings live in chapters/figures/ (``widgets.stored_figures``), each under the
sha256 of its graphviz text, written by ``python -m widgets.stored_figures_build``.
Checked here: that the chapter, run with ``dot`` hidden from PATH, finds a stored
drawing for every picture it draws (so the folder holds what the chapter draws now);
that each stored drawing is what ``dot`` draws of its text (node and edge labels,
not bytes); and the mechanism on a graph of the test's own.
"""
from __future__ import annotations

import html
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jupytext
import pytest
import torch
from nbclient import NotebookClient

from widgets import graph_picture, graph_render, stored_figures
from widgets.graph_viewer import GraphViewer
from widgets.static_view import Note, Picture, StoredPicture

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = ROOT / "chapters" / "03_autograd_graphs.py"
SVG = "{http://www.w3.org/2000/svg}"
#: The chapter's picture cells (what each calls) and how many drawings each shows.
PICTURE_CELLS = {"GraphViewer(": 2, "graph_picture(": 1, "autograd_compare_html(": 2, "compare_html(model": 2}
REBUILD = "run `python -m widgets.stored_figures_build` (with graphviz installed) and commit chapters/figures/"


def structure(svg: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """What a drawing shows, without coordinates: (node|edge, title, texts) for each, sorted."""
    shapes = []
    for group in ET.fromstring(svg).iter(f"{SVG}g"):
        kind = group.get("class", "").split(" ")[0]
        if kind in ("node", "edge"):
            title = group.findtext(f"{SVG}title") or ""
            texts = tuple(t.text or "" for t in group.iter(f"{SVG}text"))
            shapes.append((kind, title, texts))
    return sorted(shapes)


def _outputs_html(cell) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.get("outputs", []))


@pytest.fixture(scope="module")
def chapter_without_dot(tmp_path_factory):
    """Chapter 03 (its grade cell left out) run in a kernel whose PATH has no ``dot``; its cells."""
    bin_dir = tmp_path_factory.mktemp("bin")  # only this Python: no graphviz
    (bin_dir / "python").symlink_to(sys.executable)
    notebook = jupytext.read(CHAPTER)
    notebook.cells = [c for c in notebook.cells if not (c.cell_type == "code" and "mk.grade(" in c.source)]
    env = {"PATH": str(bin_dir), "MINIKERNEL_SOLUTIONS": "all"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits the environment
    try:
        assert graph_render.shutil.which("dot") is None
        NotebookClient(notebook, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(CHAPTER.parent)}}).execute()
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return [c for c in notebook.cells if c.cell_type == "code"]


@pytest.mark.own_mode
@pytest.mark.xdist_group("chapter_03_without_dot")  # one worker runs the chapter once for all four
@pytest.mark.parametrize("call", list(PICTURE_CELLS))
def test_chapter_03_without_dot_shows_the_stored_pictures_and_the_note(chapter_without_dot, call):
    cells = [c for c in chapter_without_dot if call in c.source]
    assert len(cells) == 1, f"chapter 03 has {len(cells)} cells calling {call}"
    shown = _outputs_html(cells[0])
    assert not [o for o in cells[0].outputs if o.output_type == "error"]
    assert html.escape(graph_render.STORED_NOTE) in shown
    assert html.escape(graph_render.DOT_MISSING) not in shown, f"a drawing of this cell is not stored: {REBUILD}"
    assert shown.count("<svg") == PICTURE_CELLS[call], f"{call}: {REBUILD}"


def test_each_stored_drawing_is_what_dot_draws_of_its_text():
    sources = sorted(stored_figures.FIGURES.glob("*.dot"))
    assert len(sources) >= sum(PICTURE_CELLS.values()), f"chapters/figures/ is missing drawings: {REBUILD}"
    for path in sources:
        source = path.read_text(encoding="utf-8")
        assert path.stem == stored_figures.key(source), f"{path.name} is not named by its text's sha256"
        stored = stored_figures.lookup(source)
        assert stored is not None, f"{path.name} has no .svg beside it: {REBUILD}"
        drawn = graph_render.run_dot(source, record=False)
        assert structure(stored) == structure(drawn), f"{path.stem}.svg differs from dot's drawing: {REBUILD}"


def test_every_stored_svg_has_its_text():
    svgs = {p.stem for p in stored_figures.FIGURES.glob("*.svg")}
    assert svgs == {p.stem for p in stored_figures.FIGURES.glob("*.dot")}


def test_structure_sees_a_changed_label_and_a_missing_edge():
    source = "digraph { a [label=MulBackward0]; b [label=AccumulateGrad]; a -> b; }"
    drawn = graph_render.run_dot(source, record=False)
    assert structure(drawn) == structure(graph_render.run_dot(source.replace(";", " ;"), record=False))
    assert structure(drawn) != structure(drawn.replace(">MulBackward0<", ">AddBackward0<"))
    assert structure(drawn) != structure(graph_render.run_dot(source.replace("a -> b;", ""), record=False))


# ------------------------------------------------ the mechanism, on a graph of the test's own


def _loss():
    w = torch.tensor([[2.0, -1.0, 0.5]], requires_grad=True)
    return (torch.ones(5, 3) @ w.t()).exp().sum(), {"w": w}


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """This test's graph drawn with dot and recorded into a folder that stands for chapters/figures/."""
    folder = tmp_path / "figures"
    monkeypatch.setenv(stored_figures.RECORD_VAR, str(folder))
    out, params = _loss()
    drawn = graph_picture(out, params=params)
    assert isinstance(drawn, Picture)
    monkeypatch.delenv(stored_figures.RECORD_VAR)
    monkeypatch.setattr(stored_figures, "FIGURES", folder)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert graph_render.shutil.which("dot") is None
    return drawn


def test_graph_picture_without_dot_is_the_stored_drawing_under_the_note(recorded):
    out, params = _loss()
    picture = graph_picture(out, params=params)
    assert isinstance(picture, StoredPicture)
    bundle = picture._repr_mimebundle_()
    assert bundle["text/html"].index(html.escape(graph_render.STORED_NOTE)) < bundle["text/html"].index("<svg")
    assert structure(picture.svg) == structure(recorded.svg)
    assert "brew install graphviz" in bundle["text/plain"] and "ExpBackward0" in bundle["text/plain"]


def test_the_viewer_without_dot_shows_the_stored_drawing_with_its_own_ids(recorded):
    out, params = _loss()
    pane = GraphViewer(out, params=params).torch_view.value
    assert html.escape(graph_render.STORED_NOTE) in pane
    svg = pane[pane.index("<svg"):pane.index("</svg>") + 6]
    assert 'id="g_' not in svg and 'data-name="ExpBackward0"' in svg
    assert [(k, texts) for k, _, texts in structure(svg)] == [(k, texts) for k, _, texts in structure(recorded.svg)]


def test_a_graph_that_is_not_stored_gets_the_note_alone(recorded):
    w = torch.ones(2, requires_grad=True)
    assert isinstance(graph_picture((w * 3).sum(), params={"w": w}), Note)
