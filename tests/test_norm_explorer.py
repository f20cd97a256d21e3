"""The normalization explorer (widgets/norm_explorer.py), without a browser.

Torch is the oracle: the cells a statistic lights up must be exactly the elements
torch's own indexing selects for it (``x[:, c, :]`` for BatchNorm, ``x[n]`` for
LayerNorm, ``x[n, c]`` for InstanceNorm), and normalizing with the drawn mean and
variance must reproduce ``F.batch_norm``/``F.layer_norm``/``F.instance_norm``. No
exercise marker: with the references on the numbers are checked; in student mode
the widget must name exercise 5.1 instead, without raising.
"""
from __future__ import annotations

import re

import ipywidgets as W
import pytest
import torch
import torch.nn.functional as F

from minikernel.course.exercise import uses_reference
from widgets import norm_explorer
from widgets.norm_explorer import KINDS, groups, render_html, sample, statistics

REFERENCE = uses_reference("5.1")
CELL_RE = re.compile(r'class="mk-cell" data-n="(\d+)" data-c="(\d+)" data-l="(\d+)" data-value="([^"]*)" '
                     r'data-group="([^"]*)" data-selected="([01])"')
STAT_RE = re.compile(r'class="mk-stat" data-group="([^"]*)" data-count="(\d+)" data-mean="([^"]*)" '
                     r'data-var="([^"]*)" data-ok="([01])"')
TODO = "Finish exercise 5.1 (two_pass_var) to see yours; meanwhile, the course&#x27;s reference solution&#x27;s:"
SHAPES = [(2, 3, 4), (1, 2, 5), (3, 1, 2)]
TORCH_GROUP = {  # the elements of one statistic, by torch's indexing
    "BatchNorm": lambda t, g: t[:, g[0], :],
    "LayerNorm": lambda t, g: t[g[0]],
    "InstanceNorm": lambda t, g: t[g[0], g[1]],
}
TORCH_NORM = {
    "BatchNorm": lambda x: F.batch_norm(x, None, None, training=True, eps=1e-5),
    "LayerNorm": lambda x: F.layer_norm(x, x.shape[1:], eps=1e-5),
    "InstanceNorm": lambda x: F.instance_norm(x, eps=1e-5),
}


def _page_or_todo(x, kind, group):
    if REFERENCE:
        return render_html(x, kind, group)
    with pytest.raises(NotImplementedError, match=r"exercise 5\.1 \(two_pass_var\)"):
        render_html(x, kind, group)
    return None


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", list(KINDS))
def test_highlighted_cells_are_torchs_group(kind, shape):
    x = sample(shape, seed=1)
    ordinal = torch.arange(x.numel()).view(shape)
    for g in groups(kind, shape):
        page = _page_or_todo(x, kind, g)
        if page is None:
            return
        cells = CELL_RE.findall(page)
        assert len(cells) == x.numel()
        chosen = {int(n) * shape[1] * shape[2] + int(c) * shape[2] + int(l) for n, c, l, _, _, s in cells if s == "1"}
        assert chosen == set(TORCH_GROUP[kind](ordinal, g).reshape(-1).tolist()), f"{kind} statistic {g}"
        for n, c, l, value, _, _ in cells:
            assert float(value) == pytest.approx(float(x[int(n), int(c), int(l)]))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", list(KINDS))
def test_statistics_normalize_like_torch(kind, shape):
    x = sample(shape, seed=2)
    page = _page_or_todo(x, kind, None)
    if page is None:
        return
    rows = STAT_RE.findall(page)
    assert [tuple(int(v) for v in g.split(",")) for g, *_ in rows] == groups(kind, shape)
    expected = TORCH_NORM[kind](x)
    for g, count, mean, var, ok in rows:
        group = tuple(int(v) for v in g.split(","))
        elements = TORCH_GROUP[kind](x, group)
        assert int(count) == elements.numel() and ok == "1"
        t_var, t_mean = torch.var_mean(elements, correction=0)
        assert float(mean) == pytest.approx(t_mean.item()) and float(var) == pytest.approx(t_var.item())
        normalized = (elements - float(mean)) / (float(var) + 1e-5) ** 0.5
        torch.testing.assert_close(normalized, TORCH_GROUP[kind](expected, group))


def test_the_widget_draws_or_names_the_exercise():
    w = norm_explorer()
    assert isinstance(w, W.VBox) and "mk-norm-explorer" in w._dom_classes
    assert isinstance(w.kind, W.Dropdown) and list(w.kind.options) == list(KINDS)
    assert w.group.value == (0,) and [v for _, v in w.group.options] == [(0,), (1,), (2,)]
    page = w.picture.value
    if REFERENCE:
        assert 'data-kind="BatchNorm"' in page and page.count('data-selected="1"') == 2 * 4
    else:
        # the reference's picture meanwhile, labelled as such, never an empty widget
        assert TODO in page and '<div class="mk-reference-side">' in page and "mk-cell" in page
        assert "Traceback" not in page and page.count('data-selected="1"') == 2 * 4


def test_changing_kind_and_group_redraws():
    w = norm_explorer((2, 3, 4), kind="LayerNorm")
    w.kind.value = "InstanceNorm"
    assert [v for _, v in w.group.options] == groups("InstanceNorm", (2, 3, 4)) and w.group.value == (0, 0)
    w.group.value = (1, 2)
    page = w.picture.value
    if REFERENCE:
        assert 'data-kind="InstanceNorm"' in page
        assert {(n, c) for n, c, *_ , s in CELL_RE.findall(page) if s == "1"} == {("1", "2")}
    else:
        assert TODO in page


def test_statistics_are_yours_and_match_torch():
    x = sample((2, 3, 4), seed=3)
    if not REFERENCE:
        with pytest.raises(NotImplementedError, match="exercise 5.1"):
            statistics(x, "BatchNorm")
        return
    stats = statistics(x, "BatchNorm")
    t_var, t_mean = torch.var_mean(x, (0, 2), correction=0)
    assert stats == {(c,): pytest.approx((t_mean[c].item(), t_var[c].item())) for c in range(3)}


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(ValueError, match="sides 1..6"):
        sample((2, 3))
    with pytest.raises(ValueError, match="sides 1..6"):
        norm_explorer((7, 1, 1))
    with pytest.raises(ValueError, match="kind must be one of"):
        norm_explorer(kind="GroupNorm")
    with pytest.raises(ValueError, match="has statistics"):
        render_html(sample(), "BatchNorm", (5,))
