"""The GradScaler state diagram widget (widgets/scaler_diagram.py), without a browser.

Torch is the oracle: a torch.amp.GradScaler driven by the same calls must be in the
stages the picture highlights, and the arrows drawn from ``transition`` must be the
moves torch's scaler makes. These tests check the widget, not an exercise (no
``exercise`` marker) and run the same in both modes: the fixtures ``references`` and
``stubs`` put the chapter's reference functions, or its untouched stubs, in place
of whatever ``MINIKERNEL_SOLUTIONS`` chose.
"""
from __future__ import annotations

import re

import ipywidgets as W
import pytest
import torch

import minikernel.amp.scaling as S
import solutions.amp.scaling as references_module
from minikernel.course import exercise as ex
from minikernel.amp import OptState
from widgets import scaler_diagram
from widgets.scaler_diagram import CALLS, Event, ScalerSession, diagram_edges, render_html

BOX_RE = re.compile(r'class="mk-stage" data-stage="(\w+)" data-current="(\d)" data-optimizers="([\d,]*)"')
EDGE_RE = re.compile(r'class="mk-edge" data-from="(\w+)" data-to="(\w+)" data-method="([\w,]+)" data-last="(\d)"')
TODO_RE = re.compile(r"Finish exercise (\d+\.\d+) \((\w+)\) to ([^<]*)")

SEQUENCE = [("backward", 0), ("unscale_", 0), ("unscale_", 0), ("step", 1), ("step", 1), ("unscale_", 1),
            ("step", 0), ("update", 0), ("update", 0), ("backward", 0), ("inject inf", 1), ("step", 1),
            ("step", 0), ("update", 0), ("zero_grad", 0), ("zero_grad", 1), ("backward", 1), ("step", 0)]


@pytest.fixture
def references(monkeypatch):
    """Chapter 06's reference functions in minikernel.amp.scaling, in either mode."""
    for entry in (ex.registry()[i] for i in ("6.1", "6.2", "6.3", "6.4", "6.5")):
        for name in entry.stubs:
            monkeypatch.setattr(S, name, getattr(references_module, name))


@pytest.fixture
def stubs(monkeypatch):
    """Chapter 06's untouched stubs in minikernel.amp.scaling, in either mode."""
    for entry in (ex.registry()[i] for i in ("6.1", "6.2", "6.3", "6.4", "6.5")):
        for name, stub in entry.stubs.items():
            monkeypatch.setattr(S, name, stub)


def _highlighted(page: str) -> list[str]:
    """The stage each optimizer is drawn in, by optimizer index."""
    where = {}
    for stage, current, optimizers in BOX_RE.findall(page):
        assert (current == "1") == bool(optimizers)
        for i in filter(None, optimizers.split(",")):
            where[int(i)] = stage
    return [where[i] for i in sorted(where)]


def _torch_move(stage: OptState, method: str) -> str | tuple[str, str]:
    """What torch's scaler does on ``method`` for an optimizer in ``stage``: its new stage or the error."""
    p, q = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    opt, other = torch.optim.SGD([p], lr=0.1), torch.optim.SGD([q], lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(p.sum() + q.sum()).backward()
    scaler.step(other)  # so that update() has inf checks
    if stage is not OptState.READY:
        getattr(scaler, "unscale_" if stage is OptState.UNSCALED else "step")(opt)
    try:
        getattr(scaler, method)(*([] if method == "update" else [opt]))
    except RuntimeError as err:
        return type(err).__name__, str(err)
    return scaler._per_optimizer_states[id(opt)]["stage"].name


def test_arrows_are_torchs_moves(references):
    page = render_html(ScalerSession().snapshot())
    drawn = {(src, dst, m) for src, dst, methods, _ in EDGE_RE.findall(page) for m in methods.split(",")}
    illegal = set(re.findall(r'class="mk-illegal" data-from="(\w+)" data-method="(\w+)">[^:]*: (\w+): ([^<]*)<', page))
    expected_drawn, expected_illegal = set(), set()
    for stage in OptState:
        for method in ("unscale_", "step", "update"):
            move = _torch_move(stage, method)
            if isinstance(move, str):
                expected_drawn.add((stage.name, move, method))
            else:
                expected_illegal.add((stage.name, method, *move))
    assert drawn == expected_drawn
    assert {(s, m, t, msg.replace("&#x27;", "'")) for s, m, t, msg in illegal} == expected_illegal
    assert len(diagram_edges()) == 9


def test_live_scaler_is_highlighted_where_torch_is(references):
    session = ScalerSession(n_optimizers=2)
    for name, k in SEQUENCE:
        event = session.call(name, k)
        page = render_html(session.snapshot())
        assert _highlighted(page) == session.stages("torch"), f"after {event.call}"
        assert event.message == event.torch_message, event
        assert 'class="mk-warn"' not in page, f"after {event.call}: the widget reports a disagreement"
        if event.ok and event.method:
            lit = [(src, dst) for src, dst, methods, last in EDGE_RE.findall(page) if last == "1"]
            assert lit == [(event.before, event.after)], f"{event.call}: highlighted {lit}"
        if not event.ok:
            assert f"{event.call}: {event.message}".replace("'", "&#x27;") in page
    assert any(not e.ok for e in session.log), "the sequence includes illegal calls"


def test_disagreement_with_torch_is_reported(references):
    snapshot = ScalerSession().snapshot()
    snapshot.update(torch_stages=["STEPPED"], last=Event("scaler.step(opt0)", False, "RuntimeError: x", "", "",
                                                         "step", "READY", "READY"))
    page = render_html(snapshot)
    assert "torch&#x27;s GradScaler: ok" in page
    assert "torch&#x27;s scaler is at [&#x27;STEPPED&#x27;]" in page


def test_unfinished_exercises_are_named_not_raised(stubs):
    session = ScalerSession()
    page = render_html(session.snapshot())
    assert TODO_RE.search(page).groups()[:2] == ("6.2", "transition")
    assert _highlighted(page) == ["READY"]  # the boxes are drawn all the same
    event = session.call("backward")
    assert not event.ok and event.todo.startswith("Finish exercise 6.1 (scale_outputs)")
    page = render_html(session.snapshot())
    assert "Finish exercise 6.1 (scale_outputs) to call scaler.scale(loss).backward()" in page


def test_widget_buttons_and_callback_in_either_mode():
    seen = []
    widget = scaler_diagram(n_optimizers=2, on_call=seen.append)
    assert isinstance(widget, W.VBox) and "mk-scaler-diagram" in widget._dom_classes
    assert set(widget.buttons) == set(CALLS)
    widget.optimizer.value = 1
    for name in CALLS:
        widget.buttons[name].click()  # never raises, whatever is unfinished
    assert [e.call for e in seen] == ["scaler.scale(loss).backward()", "opt1 grad[0] = inf", "scaler.unscale_(opt1)",
                                      "scaler.step(opt1)", "scaler.update()", "opt1.zero_grad()"]
    assert widget.picture.value.startswith('<div class="mk-scaler-picture">')
    widget.reset_button.click()
    assert widget.session.log == [] and _highlighted(widget.picture.value) == ["READY", "READY"]


def test_bad_arguments_raise_clearly():
    with pytest.raises(ValueError, match="n_optimizers must be 1, 2 or 3"):
        ScalerSession(n_optimizers=4)
    with pytest.raises(ValueError, match=r"optimizer must be in 0\.\.0"):
        ScalerSession().call("step", 1)
    with pytest.raises(ValueError, match="unknown call 'jump'"):
        ScalerSession().call("jump")
