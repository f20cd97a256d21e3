"""The stride explorer widget (widgets/stride_explorer.py), without a browser, and
the still pictures every widget stores for viewers that cannot run it.

Torch is the oracle: in ``torch.as_strided(torch.arange(n), shape, strides, offset)``
every value IS its storage position, so the positions the widget draws must equal
those values. These tests check the widget, not an exercise (no ``exercise``
marker) and pass in both modes: with references on (``MINIKERNEL_SOLUTIONS=all``)
every picture is compared with torch; in student mode the widget must instead say
which exercise to finish, without raising.
"""
from __future__ import annotations

import re

import ipywidgets as W
import pytest
import torch

import minikernel.strides as S
from minikernel.course.exercise import stub_exercise_id, uses_reference
from tests.test_notebooks import BARE_REPR
from widgets import (
    dispatch_trace,
    graph_picture,
    graph_svg,
    kernel_trace,
    norm_explorer,
    ring_stepper,
    scaler_diagram,
    stride_explorer,
)
from widgets.graph_viewer import GraphViewer
from widgets.scaler_diagram import ScalerSession, render_html as scaler_html
from widgets.stride_explorer import layout, operations, render_html

#: every exercise the explorer calls runs its reference (True with MINIKERNEL_SOLUTIONS=all)
REFERENCE = all(uses_reference(i) for i in ("1.1", "1.2", "1.3", "1.5", "1.6"))
CELL_RE = re.compile(r'class="mk-cell" data-index="([^"]*)" data-pos="(\d+)"')
TODO_RE = re.compile(r"Finish exercise (\d+\.\d+) \((\w+)\) to see yours here; meanwhile, PyTorch&#x27;s:")

HEADERS = [  # shape, strides, offset, storage size
    ((3, 4), (4, 1), 0, 12),
    ((4, 3), (1, 4), 0, 12),   # transposed
    ((3, 2), (4, 2), 1, 12),   # every other column, shifted
    ((3, 4), (0, 1), 2, 12),   # expanded rows: stride 0
    ((2, 3, 4), (12, 4, 1), 0, 24),
    ((2, 2, 3), (1, 6, 2), 0, 12),
    ((5,), (2,), 3, 16),
    ((), (), 5, 8),
]


def cells(page: str) -> dict[tuple[int, ...], int]:
    """{logical index: storage position} read back from the rendered HTML."""
    return {tuple(int(i) for i in idx.split(", ") if i): int(pos) for idx, pos in CELL_RE.findall(page)}


def oracle(shape, strides, offset, storage) -> dict[tuple[int, ...], int]:
    t = torch.as_strided(torch.arange(storage), shape, strides, offset)
    return {tuple(int(i) for i in idx): int(t[idx]) for idx in _indices(shape)}


def unravel(ordinal, shape) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(ordinal), shape))


def _indices(shape) -> list[tuple[int, ...]]:
    """Every index of ``shape`` in row-major order (torch's own unravel_index)."""
    return [unravel(k, shape) for k in range(torch.Size(shape).numel())]


def todo_or_none(page: str) -> str | None:
    """The exercise a 'Finish exercise N.M' message names, checking it may be unfinished
    and that PyTorch's picture is drawn meanwhile (never an empty widget)."""
    match = TODO_RE.search(page)
    if match:
        assert not uses_reference(match.group(1)), f"references are on, yet the widget says: {match.group(0)}"
        assert 'class="mk-picture mk-torch-side"' in page and "mk-cell" in page and "Traceback" not in page
        return match.group(1)
    assert "mk-torch-side" not in page
    return None


def run_or_todo(fn, *args):
    """fn(*args), or None where it stops at a stub that is really unfinished."""
    try:
        return fn(*args)
    except NotImplementedError as exc:
        exercise = stub_exercise_id(exc)
        assert exercise and not uses_reference(exercise), f"{exc!r} raised with references on"
        return None


@pytest.mark.parametrize("shape, strides, offset, storage", HEADERS)
def test_layout_positions_are_torchs(shape, strides, offset, storage):
    found = run_or_todo(layout, shape, strides, offset)
    if found is None:
        return
    assert dict(found) == oracle(shape, strides, offset, storage)
    assert [i for i, _ in found] == _indices(shape)  # row-major order


@pytest.mark.parametrize("shape, strides, offset, storage", HEADERS)
def test_render_html_positions_are_torchs(shape, strides, offset, storage):
    page = run_or_todo(render_html, shape, strides, offset, storage, "call")
    if page is None:
        return
    expected = oracle(shape, strides, offset, storage)
    assert cells(page) == expected
    used = {int(p) for p in re.findall(r'class="mk-slot" data-pos="(\d+)" data-used="1"', page)}
    slots = re.findall(r'class="mk-slot" data-pos="(\d+)"', page)
    assert used == set(expected.values()) and len(slots) == storage
    contiguous = torch.as_strided(torch.arange(storage), shape, strides, offset).is_contiguous()
    assert f"<b>is_contiguous()</b> {contiguous}" in page or (
        not uses_reference("1.6") and "<b>is_contiguous()</b> (finish exercise 1.6)" in page)
    assert "mk-warn" not in page  # the references agree with torch


def _op_cases():
    for shape in [(3, 4), (2, 3, 4), (6,)]:
        for key in operations(shape):
            yield shape, key


@pytest.mark.parametrize("shape, op", list(_op_cases()))
def test_operation_view_is_torchs(shape, op):
    w = stride_explorer(shape, op=op)
    page = w.picture.value
    todo_or_none(page)  # yours, or PyTorch's while yours is unfinished: the same picture
    x = torch.arange(torch.Size(shape).numel()).view(shape)
    view = operations(shape)[op][1](x, tuple(shape[::-1]) if len(shape) > 1 else (2, -1))
    assert "mk-error" not in page and "mk-warn" not in page, page
    assert cells(page) == {i: int(view[i]) for i in _indices(tuple(view.shape))}
    assert f"<b>stride()</b> {view.stride()}" in page
    assert f"<b>storage_offset()</b> {view.storage_offset()}" in page
    call = re.search(r'class="mk-call"[^>]*><code>(.*?)</code>', page).group(1)
    again = eval(call, {"torch": torch})  # the torch call shown makes exactly this view
    assert again.stride() == view.stride() and torch.equal(again, view)


@pytest.mark.parametrize("shape, strides, offset, storage", HEADERS[:-1])
def test_as_strided_mode_is_torchs(shape, strides, offset, storage):
    w = stride_explorer(shape, strides=strides, offset=offset, storage=storage)
    assert w.mode.value == "strided" and w.offset.value == offset
    page = w.picture.value
    todo_or_none(page)
    assert cells(page) == oracle(shape, strides, offset, storage)
    assert f"torch.as_strided(torch.arange({storage}), {shape}, {strides}, {offset})" in page


def test_offset_slider_moves_the_view():
    w = stride_explorer((2, 3), strides=(3, 1), storage=12)
    assert isinstance(w.offset, W.IntSlider) and w.offset.description == "offset"
    assert w.offset.max == 12 - 1 - (1 * 3 + 2 * 1)  # the largest offset that still fits
    before = w.picture.value
    w.offset.value = 2
    after = w.picture.value
    todo_or_none(after)
    assert after != before
    assert cells(after) == {i: p + 2 for i, p in cells(before).items()}
    assert "torch.as_strided(torch.arange(12), (2, 3), (3, 1), 2)" in after


@pytest.mark.parametrize("text, message", [
    ("4, x", "is not a list of integers"),
    ("4", "has 2 dimensions but strides (4,) has 1"),
    ("5, 1", "past the end of the storage"),
    ("-4, 1", "must be non-negative"),
])
def test_invalid_strides_show_an_error_line(text, message):
    w = stride_explorer((3, 4), strides=(4, 1))
    w.strides.value = text
    page = w.picture.value
    assert 'class="mk-error"' in page and message in page, page
    assert "Traceback" not in page and "mk-cell" not in page


@pytest.mark.parametrize("field, text, message", [
    ("base", "3, x", "is not a list of integers"),
    ("base", "", "at least one dimension"),
    ("view_as", "5, -1", "shape &#x27;[5, -1]&#x27; is invalid for input of size 12"),  # torch's own
])
def test_invalid_operation_input_shows_an_error_line(field, text, message):
    w = stride_explorer((3, 4), op="view")
    getattr(w, field).value = text
    page = w.picture.value
    assert 'class="mk-error"' in page and message in page, page
    assert "Traceback" not in page


def test_unfinished_exercise_shows_which_to_finish(monkeypatch):
    """Both modes: with index_to_position a stub, the widget names it and draws PyTorch's picture."""
    def stub(index, strides, offset=0):
        raise NotImplementedError("exercise 1.2 (index_to_position) is not implemented yet")

    monkeypatch.setattr(S, "index_to_position", stub)
    monkeypatch.setattr(S, "to_index", unravel)
    for w, view in ((stride_explorer(), torch.arange(12).view(3, 4)),
                    (stride_explorer(op="[:, ::2]"), torch.arange(12).view(3, 4)[:, ::2]),
                    (stride_explorer(strides=(1, 3)), torch.arange(12).as_strided((3, 4), (1, 3)))):
        page = w.picture.value
        assert TODO_RE.search(page)[1] == "1.2" and 'class="mk-picture mk-torch-side"' in page, page
        assert cells(w.picture.value) == {i: int(view[i]) for i in _indices(tuple(view.shape))}


def test_draws_with_references_or_names_the_exercise_to_finish():
    """References on: pictures, no message. Stubs untouched: the message and PyTorch's picture."""
    untouched = run_or_todo(S.index_to_position, (0,), (1,), 0) is None
    for w in (stride_explorer(), stride_explorer((2, 3, 4), op="permute"), stride_explorer(strides=(4, 1))):
        page = w.picture.value
        if REFERENCE:
            assert cells(page) and not TODO_RE.search(page), page
        elif untouched:
            assert todo_or_none(page) and cells(page), page


def test_wrong_positions_are_flagged(monkeypatch):
    """A buggy index_to_position (ignores the offset) draws its picture, with a warning."""
    right = S.index_to_position
    monkeypatch.setattr(S, "index_to_position", lambda index, strides, offset=0: right(index, strides, 0))
    page = stride_explorer((2, 3), strides=(3, 1), offset=2, storage=12).picture.value
    if todo_or_none(page):
        return
    assert 'class="mk-warn"' in page and "torch puts index (0, 0) at position 2" in page
    assert cells(page)[(0, 0)] == 0  # the learner's answer is what is drawn


def test_switching_to_as_strided_keeps_the_view():
    w = stride_explorer((3, 4), op="[1:]")
    before = w.picture.value
    w.mode.value = "strided"
    if todo_or_none(before):
        return
    assert (w.shape.value, w.strides.value, w.offset.value, w.storage.value) == ("2, 4", "4, 1", 4, 12)
    assert cells(w.picture.value) == cells(before)


def test_widget_structure():
    w = stride_explorer()
    assert isinstance(w, W.VBox) and "mk-stride-explorer" in w._dom_classes
    assert isinstance(w.picture, W.HTML) and isinstance(w.op, W.Dropdown)
    assert [k for _, k in w.op.options] == list(operations((3, 4)))
    assert w.mode.value == "op" and w.op.value == "none"
    assert w.base.layout.display != "none" and w.view_as.layout.display == "none"  # own layouts
    assert w._strided_box.layout.display == "none"
    w.base.value = "2, 3, 4"
    assert "t()" not in [k for _, k in w.op.options] and "permute" in [k for _, k in w.op.options]
    with pytest.raises(ValueError, match="not one of"):
        stride_explorer(op="transpose")


# ------------------------------------------------------------ static renderings


def test_each_widget_stores_a_still_picture_and_a_line_of_text():
    x = torch.tensor([[0.5, -1.0]], requires_grad=True)
    made = [stride_explorer(), kernel_trace(), norm_explorer(), ring_stepper(), scaler_diagram(),
            GraphViewer((x * 2).sum(), None), dispatch_trace()]
    for widget in made:
        bundle = widget._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle  # live, it is still the widget
        assert not BARE_REPR.match(bundle["text/plain"]), bundle["text/plain"]
        pictures = [w.value for w in _html_children(widget) if w.value]
        assert pictures and all(p in bundle["text/html"] for p in pictures), type(widget).__name__


def _html_children(widget):
    if isinstance(widget, W.HTML):
        return [widget]
    return [h for c in getattr(widget, "children", ()) for h in _html_children(c)]


def test_graph_picture_is_svg_and_png_of_the_same_graph():
    w = torch.tensor([[3.0, 1.0]], requires_grad=True)
    loss = (w * w).sum()
    bundle = graph_picture(loss, params={"w": w})._repr_mimebundle_()
    assert bundle["image/svg+xml"] == graph_svg(loss, params={"w": w})
    assert bundle["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert bundle["text/plain"] == "[autograd graph, 3 nodes: SumBackward0, MulBackward0, AccumulateGrad]"


def test_the_scaler_diagram_says_skipped_when_torch_skips_the_step():
    for inject in (True, False):
        session = ScalerSession()
        torch_model = session.sides["torch"][1][0]
        events = [session.call("backward")] + ([session.call("inject inf")] if inject else [])
        before = [p.detach().clone() for p in torch_model.parameters()]
        event = session.call("step")
        todo = [e.todo for e in [*events, event] if e.todo]
        if todo:  # student mode: the diagram names the exercise instead
            assert "exercise" in todo[0].lower(), todo
            continue
        torch_skipped = all(torch.equal(a, b) for a, b in zip(before, torch_model.parameters()))
        assert torch_skipped == inject  # torch is the oracle
        assert event.skipped == torch_skipped
        page = scaler_html(session.snapshot())
        assert ("skipped optimizer.step()" in page) == inject and ("scaler.step(opt0): ok" in page) != inject
