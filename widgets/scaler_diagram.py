"""GradScaler state diagram: READY / UNSCALED / STEPPED, with a live scaler in it.

The arrows are drawn from *your* ``transition`` (exercise 6.2): for each stage and
each method, an arrow to the stage it returns, or a line with the error it raises.
The highlighted box is where each optimizer of a live ``minikernel.amp.GradScaler``
is now; press the buttons (or call ``diagram.call("step", 0)`` from code) and it
moves. A torch.amp.GradScaler twin gets the same calls on an identical model, and
the widget says so whenever the two disagree.

While an exercise is unfinished the widget names it ("Finish exercise 6.2
(transition) ...") instead of raising. ``render_html`` is a pure function of a
snapshot, so the picture can be checked without a browser: boxes carry
``data-stage``/``data-current``, arrows ``data-from``/``data-to``/``data-method``.
"""
from __future__ import annotations

import copy
import html
from dataclasses import dataclass, field
from typing import Callable, Optional

import ipywidgets as W
import torch

import minikernel.amp as mk_amp
from minikernel.amp import OptState
from minikernel.amp import scaling as S
from minikernel.course.exercise import finish_message, stub_exercise_id

from .static_view import StaticView

STAGES = tuple(s.name for s in OptState)           #: READY, UNSCALED, STEPPED
CALLS = ("backward", "inject inf", "unscale_", "step", "update", "zero_grad")
_X = {"READY": 140, "UNSCALED": 370, "STEPPED": 600}  # box centres in the SVG
_Y, _W, _H = 120, 130, 50


def todo_message(exc: NotImplementedError, doing: str) -> str:
    """'Finish exercise 6.2 (transition) to <doing>' for a stub's error."""
    return finish_message(exc, f"to {doing}")


# ------------------------------------------------------------------ edges from exercise 6.2
@dataclass(frozen=True)
class Edge:
    """``method`` called in stage ``source``: goes to ``target``, or raises ``error``."""

    source: str
    method: str
    target: Optional[str] = None
    error: str = ""


def diagram_edges() -> list[Edge]:
    """Ask your ``transition`` (exercise 6.2) about every (stage, method) pair.

    Raises NotImplementedError while exercise 6.2 is a stub.
    """
    edges = []
    for stage in OptState:
        for method in S.METHODS:
            try:
                edges.append(Edge(stage.name, method, target=S.transition(stage, method).name))
            except NotImplementedError:
                raise
            except Exception as exc:  # noqa: BLE001 - an illegal call is part of the picture
                edges.append(Edge(stage.name, method, error=f"{type(exc).__name__}: {exc}"))
    return edges


# ------------------------------------------------------------------ the live session
@dataclass
class Event:
    """What one call did: ``ok``, minikernel's error text, torch's error text, or a TODO.

    ``method`` is the GradScaler method called ("" for backward, inject inf,
    zero_grad), ``before``/``after`` the stage of the optimizer it acted on (for
    ``update``, of optimizer 0).
    """

    call: str
    ok: bool
    message: str = ""
    torch_message: str = ""
    todo: str = ""
    method: str = ""
    before: str = ""
    after: str = ""
    skipped: bool = False  #: a step() that found inf/NaN and so did not run optimizer.step()


@dataclass
class ScalerSession:
    """A small model per optimizer, one minikernel GradScaler and an identical torch twin.

    Args:
        n_optimizers (int, optional): optimizers sharing the scaler. Default: ``1``
        init_scale (float, optional): the scalers' initial scale. Default: ``2.0**16``
        growth_interval (int, optional): clean iterations before the scale grows. Default: ``2``
    """

    n_optimizers: int = 1
    init_scale: float = 2.0**16
    growth_interval: int = 2
    log: list[Event] = field(default_factory=list)

    def __post_init__(self):
        if not 1 <= self.n_optimizers <= 3:
            raise ValueError(f"n_optimizers must be 1, 2 or 3, not {self.n_optimizers}")
        torch.manual_seed(0)
        models = [torch.nn.Linear(3, 2) for _ in range(self.n_optimizers)]
        self.x = torch.randn(4, 3)
        self.sides = {}
        for name, cls in (("minikernel", mk_amp.GradScaler), ("torch", torch.amp.GradScaler)):
            mine = copy.deepcopy(models)
            opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in mine]
            self.sides[name] = (cls("cpu", init_scale=self.init_scale, growth_interval=self.growth_interval),
                                mine, opts)

    @property
    def scaler(self) -> mk_amp.GradScaler:
        return self.sides["minikernel"][0]

    @property
    def optimizers(self) -> list[torch.optim.Optimizer]:
        return self.sides["minikernel"][2]

    def _run(self, side: str, name: str, k: int) -> None:
        scaler, models, opts = self.sides[side]
        if name == "backward":
            scaler.scale(sum(m(self.x).pow(2).mean() for m in models)).backward()
        elif name == "inject inf":
            grad = next(models[k].parameters()).grad
            if grad is None:
                raise ValueError("no gradients yet: call backward first")
            grad.view(-1)[0] = float("inf")
        elif name in ("unscale_", "step"):
            getattr(scaler, name)(opts[k])
        elif name == "update":
            scaler.update()
        else:  # zero_grad
            opts[k].zero_grad()

    def call(self, name: str, optimizer: int = 0) -> Event:
        """Make call ``name`` (one of ``CALLS``) on both scalers; returns and logs the Event."""
        if name not in CALLS:
            raise ValueError(f"unknown call {name!r}; one of {', '.join(CALLS)}")
        if not 0 <= optimizer < self.n_optimizers:
            raise ValueError(f"optimizer must be in 0..{self.n_optimizers - 1}, not {optimizer}")
        label = {"backward": "scaler.scale(loss).backward()", "update": "scaler.update()",
                 "inject inf": f"opt{optimizer} grad[0] = inf", "zero_grad": f"opt{optimizer}.zero_grad()"
                 }.get(name, f"scaler.{name}(opt{optimizer})")
        method = name if name in S.METHODS else ""
        before = self.stages()[optimizer]
        results = {}
        for side in ("minikernel", "torch"):
            try:
                self._run(side, name, optimizer)
                results[side] = ""
            except NotImplementedError as exc:
                if not stub_exercise_id(exc):
                    raise
                event = Event(label, False, todo=todo_message(exc, f"call {label}") + " (then press reset)")
                self.log.append(event)
                return event
            except Exception as exc:  # noqa: BLE001 - illegal calls are what the diagram shows
                results[side] = f"{type(exc).__name__}: {exc}"
        skipped = name == "step" and not results["minikernel"] and self._found_inf(optimizer)
        event = Event(label, not results["minikernel"], results["minikernel"], results["torch"], method=method,
                      before=before, after=self.stages()[optimizer], skipped=skipped)
        self.log.append(event)
        return event

    def _found_inf(self, k: int) -> bool:
        """Whether optimizer ``k``'s gradients held inf/NaN when they were unscaled."""
        state = self.scaler._per_optimizer_states.get(id(self.optimizers[k]))
        return bool(state) and sum(float(t) for t in state["found_inf_per_device"].values()) > 0

    def stages(self, side: str = "minikernel") -> list[str]:
        """Each optimizer's stage in this iteration."""
        scaler, _, opts = self.sides[side]
        states = scaler._per_optimizer_states
        return [states[id(o)]["stage"].name if id(o) in states else "READY" for o in opts]

    def snapshot(self) -> dict:
        """Everything ``render_html`` draws."""
        try:
            edges, edges_todo = diagram_edges(), ""
        except NotImplementedError as exc:
            edges, edges_todo = [], todo_message(exc, "draw the arrows")
        scaler = self.scaler
        found = [sum(float(t) for t in scaler._per_optimizer_states[id(o)]["found_inf_per_device"].values())
                 if id(o) in scaler._per_optimizer_states else None for o in self.optimizers]
        return {"stages": self.stages(), "torch_stages": self.stages("torch"), "edges": edges,
                "edges_todo": edges_todo, "scale": scaler.get_scale(),
                "torch_scale": self.sides["torch"][0].get_scale(), "growth_tracker": scaler._get_growth_tracker(),
                "found_inf": found, "last": self.log[-1] if self.log else None}


# ------------------------------------------------------------------ drawing
def _path(source: str, target: str) -> tuple[str, float, float]:
    """SVG path and label position of the arrow source -> target.

    Neighbours to the right: a straight arrow between the boxes; two to the right:
    an arc above; to the left: arcs below; to itself: a loop on the box's left edge.
    """
    x1, x2 = _X[source], _X[target]
    top, bottom = _Y - _H / 2, _Y + _H / 2
    hops = round(abs(x2 - x1) / (_X["UNSCALED"] - _X["READY"]))
    if hops == 0:
        left = x1 - _W / 2
        return (f"M {left} {_Y - 10} C {left - 55} {_Y - 40}, {left - 55} {_Y + 40}, {left} {_Y + 10}",
                left - 32, _Y + 4 + 38)
    if x2 > x1 and hops == 1:
        return f"M {x1 + _W / 2} {_Y} L {x2 - _W / 2 - 2} {_Y}", (x1 + x2) / 2, _Y - 8
    if x2 > x1:
        return f"M {x1 + 20} {top} Q {(x1 + x2) / 2} {top - 95}, {x2 - 20} {top - 2}", (x1 + x2) / 2, top - 52
    depth = 45 if hops == 1 else 95  # the short arc's label sits inside it, the long one's below
    return (f"M {x1 - 20} {bottom} Q {(x1 + x2) / 2} {bottom + 2 * depth}, {x2 + 20} {bottom + 2}",
            (x1 + x2) / 2, bottom + depth + (-8 if hops == 1 else 15))


def _arrow(source: str, target: str, methods: list[str], last: bool) -> str:
    path, lx, ly = _path(source, target)
    label = " / ".join(f"{m}()" for m in methods)
    colour, width, head = ("#d9480f", 3, "mk-head-last") if last else ("#555", 1.6, "mk-head")
    return (f'<g class="mk-edge" data-from="{source}" data-to="{target}" data-method="{",".join(methods)}" '
            f'data-last="{int(last)}"><path d="{path}" fill="none" stroke="{colour}" stroke-width="{width}" '
            f'marker-end="url(#{head})"/><text x="{lx}" y="{ly}" text-anchor="middle" '
            f'font-family="monospace" font-size="12" fill="{colour}">{html.escape(label)}</text></g>')


def _box(stage: str, optimizers: list[int]) -> str:
    current = bool(optimizers)
    fill, stroke = ("#ffe8a3", "#b7791f") if current else ("#f4f4f4", "#888")
    badges = " ".join(f"opt{i}" for i in optimizers)
    x = _X[stage]
    return (f'<g class="mk-stage" data-stage="{stage}" data-current="{int(current)}" '
            f'data-optimizers="{",".join(map(str, optimizers))}"><rect x="{x - _W / 2}" y="{_Y - _H / 2}" '
            f'width="{_W}" height="{_H}" rx="10" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{3 if current else 1.5}"/><text x="{x}" y="{_Y - 3 if current else _Y + 5}" '
            f'text-anchor="middle" font-family="sans-serif" font-size="15" font-weight="bold">{stage}</text>'
            f'<text x="{x}" y="{_Y + 15}" text-anchor="middle" font-family="monospace" '
            f'font-size="12" fill="#8a5a00">{badges}</text></g>')


def _line(text: str, kind: str) -> str:
    colour = {"todo": "#8a5a00", "error": "#b00020", "warn": "#8a5a00", "ok": "#1a7f37", "skipped": "#6f42c1"}.get(kind, "#333")
    return (f'<div class="mk-{kind}" style="color:{colour};font-family:sans-serif;margin:3px 0">'
            f'{html.escape(text)}</div>')


def render_html(snapshot: dict) -> str:
    """Draw a ``ScalerSession.snapshot()``: boxes, arrows from your ``transition``, the
    illegal calls with their errors, the scale, and what the last call did.

    Example::

        >>> page = render_html(ScalerSession().snapshot())
        >>> 'data-stage="READY" data-current="1"' in page
        True
    """
    stages, last = snapshot["stages"], snapshot["last"]
    moved = (last.before, last.method, last.after) if last is not None and last.ok else None
    by_pair: dict[tuple[str, str], list[str]] = {}
    for e in snapshot["edges"]:
        if e.target is not None:
            by_pair.setdefault((e.source, e.target), []).append(e.method)
    arrows = "".join(_arrow(s, t, ms, moved is not None and (moved[0], moved[2]) == (s, t) and moved[1] in ms)
                     for (s, t), ms in by_pair.items())
    boxes = "".join(_box(st, [i for i, s in enumerate(stages) if s == st]) for st in STAGES)
    heads = "".join(f'<marker id="{name}" markerWidth="10" markerHeight="10" refX="8" refY="5" orient="auto" '
                    f'markerUnits="userSpaceOnUse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
                    for name, colour in (("mk-head", "#555"), ("mk-head-last", "#d9480f")))
    svg = (f'<svg class="mk-diagram" width="680" height="280" viewBox="0 0 680 280" '
           f'xmlns="http://www.w3.org/2000/svg"><defs>{heads}</defs>{arrows}{boxes}</svg>')
    parts = [svg]
    if snapshot["edges_todo"]:
        parts.append(_line(snapshot["edges_todo"], "todo"))
    illegal = [e for e in snapshot["edges"] if e.error]
    if illegal:
        parts.append('<ul class="mk-illegal-list" style="font:12px monospace;margin:4px 0 8px 0">' + "".join(
            f'<li class="mk-illegal" data-from="{e.source}" data-method="{e.method}">{e.method}() in '
            f'{e.source}: {html.escape(e.error)}</li>' for e in illegal) + "</ul>")
    found = ", ".join(f"opt{i} {'-' if f is None else f'{f:g}'}" for i, f in enumerate(snapshot["found_inf"]))
    parts.append(f'<div class="mk-info" style="font:13px monospace">scale {snapshot["scale"]:g} &nbsp; '
                 f'growth tracker {snapshot["growth_tracker"]} &nbsp; found_inf: {found}</div>')
    if last is not None:
        if last.todo:
            parts.append(_line(last.todo, "todo"))
        elif last.skipped:  # step() returned normally, but the optimizer did not move
            parts.append(_line(f"{last.call}: skipped optimizer.step() (inf/NaN found in the gradients; "
                               "update() will lower the scale)", "skipped"))
        elif last.ok:
            parts.append(_line(f"{last.call}: ok", "ok"))
        else:
            parts.append(_line(f"{last.call}: {last.message}", "error"))
        if not last.todo and last.message != last.torch_message:
            parts.append(_line(f"torch's GradScaler: {last.torch_message or 'ok'}", "warn"))
    if (snapshot["stages"], snapshot["scale"]) != (snapshot["torch_stages"], snapshot["torch_scale"]):
        parts.append(_line(f"torch's scaler is at {snapshot['torch_stages']}, scale {snapshot['torch_scale']:g}; "
                           f"yours at {snapshot['stages']}, scale {snapshot['scale']:g}", "warn"))
    return f'<div class="mk-scaler-picture">{"".join(parts)}</div>'


# ------------------------------------------------------------------ the widget
class ScalerDiagram(StaticView, W.VBox):
    """What ``scaler_diagram`` returns: buttons, an optimizer picker and the picture."""

    static_name = "the GradScaler diagram"

    def __init__(self, n_optimizers: int = 1, init_scale: float = 2.0**16, growth_interval: int = 2,
                 on_call: Callable[[Event], None] | None = None):
        self._settings = (n_optimizers, init_scale, growth_interval)
        self.session = ScalerSession(*self._settings)
        self.on_call = on_call
        self.optimizer = W.Dropdown(options=[(f"opt{i}", i) for i in range(n_optimizers)], value=0,
                                    description="optimizer", layout=W.Layout(width="14em"))
        self.buttons = {name: W.Button(description=name, layout=W.Layout(width="auto")) for name in CALLS}
        self.reset_button = W.Button(description="reset", button_style="warning", layout=W.Layout(width="auto"))
        for name, button in self.buttons.items():
            button.add_class(f"mk-call-{name.replace(' ', '-')}")
            button.on_click(lambda _button, name=name: self.call(name, self.optimizer.value))
        self.reset_button.on_click(lambda _button: self.reset())
        self.picture = W.HTML()
        self.picture.add_class("mk-view")
        super().__init__([W.HBox([*self.buttons.values(), self.reset_button]), self.optimizer, self.picture])
        self.add_class("mk-scaler-diagram")
        self.redraw()

    def call(self, name: str, optimizer: int = 0) -> Event:
        """Make a call (one of ``CALLS``) on the live scaler and redraw; returns the Event."""
        event = self.session.call(name, optimizer)
        self.redraw()
        if self.on_call is not None:
            self.on_call(event)
        return event

    def reset(self) -> None:
        """Fresh model, optimizers and scalers."""
        self.session = ScalerSession(*self._settings)
        self.redraw()

    def redraw(self) -> None:
        self.picture.value = render_html(self.session.snapshot())


def scaler_diagram(n_optimizers: int = 1, init_scale: float = 2.0**16, growth_interval: int = 2,
                   on_call: Callable[[Event], None] | None = None) -> ScalerDiagram:
    r"""The GradScaler stage machine, drawn from your ``transition`` and driven live.

    Buttons make calls on a ``minikernel.amp.GradScaler`` shared by ``n_optimizers``
    SGD optimizers (one small ``Linear`` each): ``backward`` is
    ``scaler.scale(loss).backward()``, ``inject inf`` overwrites one gradient element
    with inf, ``unscale_``/``step``/``zero_grad`` act on the chosen optimizer, and
    ``update`` ends the iteration. The box each optimizer is in is highlighted; an
    illegal call shows its error, and any disagreement with a torch.amp.GradScaler
    twin driven by the same calls is shown under the picture.

    Args:
        n_optimizers (int, optional): 1 to 3 optimizers sharing the scaler. Default: ``1``
        init_scale (float, optional): initial scale. Default: ``2.0**16``
        growth_interval (int, optional): clean iterations before the scale doubles. Default: ``2``
        on_call (callable, optional): called as ``on_call(event)`` after every call,
            with the ``Event`` (``call``, ``ok``, ``message``, ``torch_message``, ``todo``).
            Default: ``None``

    Returns:
        ScalerDiagram: an ``ipywidgets.VBox`` with CSS class ``mk-scaler-diagram``;
        ``.call(name, optimizer)`` makes a call from code, ``.session.scaler`` is the
        live scaler.

    Example::

        >>> from widgets import scaler_diagram
        >>> d = scaler_diagram(n_optimizers=2)                  # doctest: +SKIP
        >>> d.call("backward"); d.call("unscale_", 0)           # doctest: +SKIP
    """
    return ScalerDiagram(n_optimizers, init_scale, growth_interval, on_call)
