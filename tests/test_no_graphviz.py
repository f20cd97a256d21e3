"""Chapter 03's graph pictures without graphviz, for a graph the course did not store:
a one-line note, never a traceback (tests/test_stored_figures.py: the stored ones).

``PATH`` is pointed at an empty folder, so neither ``shutil.which("dot")`` nor the
graphviz package finds ``dot``; the stored drawings are pointed at an empty folder.
"""
from __future__ import annotations

import pytest
import torch

from widgets import graph_picture, graph_render, hiddenlayer_compat, stored_figures
from widgets.static_view import Note

INSTALL = "install graphviz"


@pytest.fixture
def no_dot(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    (tmp_path / "figures").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(stored_figures, "FIGURES", tmp_path / "figures")
    assert graph_render.shutil.which("dot") is None


def _loss():
    w = torch.tensor([[3.0, 1.0]], requires_grad=True)
    b = torch.tensor([[3.0]], requires_grad=True)
    x, y = torch.ones(4, 2), torch.zeros(4, 1)
    return torch.mean(torch.pow(x @ w.t() + b - y, 2)), {"w": w, "b": b}


def test_graph_picture_is_a_note_naming_the_fix_and_the_nodes(no_dot):
    out, params = _loss()
    picture = graph_picture(out, params=params)
    assert isinstance(picture, Note)
    bundle = picture._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    assert INSTALL in bundle["text/plain"] and "MeanBackward0" in bundle["text/plain"]
    assert 'class="mk-no-graphviz"' in bundle["text/html"]


def test_torchviz_comparison_is_a_note(no_dot):
    out, params = _loss()
    text = hiddenlayer_compat.autograd_compare_html(out, params=params)
    assert 'class="mk-no-graphviz"' in text and INSTALL in text and "<svg" not in text


def test_hiddenlayer_comparison_is_a_note(no_dot):
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 2))
    text = hiddenlayer_compat.compare_html(model, torch.randn(1, 1, 8, 8))
    assert 'class="mk-no-graphviz"' in text and INSTALL in text and "<svg" not in text


def test_run_dot_raises_graphviz_missing_with_the_install_line(no_dot):
    with pytest.raises(graph_render.GraphvizMissing, match="brew install graphviz"):
        graph_render.run_dot("digraph { a -> b }")

