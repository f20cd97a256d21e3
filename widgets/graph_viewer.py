"""Graph viewer: torch's and minikernel's backward graph of one expression, side by side.

A slider steps through backward in the order the engine runs the nodes. At each
step the node that runs is orange, the nodes that already ran are green, and a
table lists, for both libraries, which node runs and the gradient arriving at it
(its ``grad_outputs``: shape and the first values).

The order and the gradients come from ``graph_steps``: torch's recorded with node
pre-hooks during ``backward(retain_graph=True)``, minikernel's from *your*
``topological_order`` (exercise 3.1) and engine (3.3 and the op backwards).
While one of those is a stub, minikernel's side names the exercise to finish.
Recording runs backward once on each graph (leaves' ``.grad`` are restored; tensor
hooks do fire), so the graphs must not have been freed by an earlier ``backward()``.

``steps_html`` and ``pane_html`` are plain functions (HTML with
``data-`` attributes), testable without a browser; the SVG is ``graph_render``'s.
"""
from __future__ import annotations

import html
import itertools
from typing import Optional, Sequence

import ipywidgets as W
import torch

from minikernel.course.exercise import finish_message, stub_exercise_id
from minikernel.tensor import Tensor as MkTensor

from .graph_render import STORED_NOTE, GraphInfo, GraphvizMissing, Params, describe, render_svg, stored_graph_svg
from .graph_steps import Step, grad_text, grads_match, minikernel_steps, record_steps, torch_steps
from .static_view import StaticView

__all__ = ["GraphViewer", "graph_viewer", "steps_html", "pane_html", "record_steps", "Step"]


def message_html(text: str, kind: str = "error") -> str:
    """One line of text; ``kind`` is 'todo' (unfinished exercise), 'error' or 'warn'."""
    colour = "#b00020" if kind == "error" else "#8a5a00"
    return (f'<div class="mk-{kind}" style="color:{colour};font-family:sans-serif;margin:4px 0">'
            f'{html.escape(text)}</div>')


def _cell(step: Optional[Step], side: str) -> str:
    if step is None:
        return f'<td class="mk-{side}" data-name="">–</td><td></td>'
    grads = "" if step.grads is None else "<br>".join(grad_text(g) for g in step.grads)
    return (f'<td class="mk-{side}" data-name="{step.name}" data-node="{step.uid}">{step.name}</td>'
            f'<td style="font-family:monospace">{html.escape(grads) if grads else "?"}</td>')


def steps_html(torch_side: Sequence[Step], mk_side: Optional[Sequence[Step]], current: int) -> str:
    """The execution-order table: one row per step, torch's node and gradient, then minikernel's.

    Rows are ``<tr class="mk-step" data-step="k" data-torch=NAME data-minikernel=NAME
    data-match="1|0|" data-current="1|0">``; ``mk_side`` None leaves minikernel's cells empty.
    """
    rows = []
    for k in range(max(len(torch_side), len(mk_side or ()))):
        t = torch_side[k] if k < len(torch_side) else None
        m = mk_side[k] if mk_side is not None and k < len(mk_side) else None
        same = None if t is None or m is None else (t.name == m.name and grads_match(t.grads, m.grads) is not False)
        mark = {None: "", True: "✓", False: "✗"}[same]
        style = "background:#fff3e0;font-weight:bold" if k == current else ""
        rows.append(f'<tr class="mk-step" data-step="{k}" data-torch="{t.name if t else ""}" '
                    f'data-minikernel="{m.name if m else ""}" data-match="{"" if same is None else int(same)}" '
                    f'data-current="{int(k == current)}" style="{style}"><td>{k + 1}</td>{_cell(t, "torch")}'
                    f'{_cell(m, "minikernel")}<td>{mark}</td></tr>')
    head = ("<tr><th>step</th><th>torch runs</th><th>gradient arriving</th><th>minikernel runs</th>"
            "<th>gradient arriving</th><th></th></tr>")
    return (f'<table class="mk-steps" style="border-collapse:collapse;font:12px sans-serif" cellpadding="3">'
            f'{head}{"".join(rows)}</table>')


def pane_html(graph: GraphInfo, steps: Optional[Sequence[Step]], current: int, title: str,
              prefix: str, messages: Sequence[tuple[str, str]] = ()) -> str:
    """One side: a title, (kind, text) message lines, and the SVG with step ``current`` orange
    and the steps before it green (no colouring when ``steps`` is None)."""
    active, done = None, ()
    if steps:
        current = min(current, len(steps) - 1)
        active, done = steps[current].uid, [s.uid for s in steps[:current]]
    try:
        svg = render_svg(graph, active, done, prefix=prefix)
    except GraphvizMissing as exc:  # no graphviz: the stored drawing (uncoloured), or say so
        stored = stored_graph_svg(graph, prefix=prefix)
        svg = message_html(str(exc)) if stored is None else message_html(STORED_NOTE, "warn") + stored
    except RuntimeError as exc:  # dot failed: say so instead of a traceback
        svg = message_html(str(exc))
    notes = "".join(message_html(text, kind) for kind, text in messages)
    return (f'<div class="mk-graph" data-side="{graph.side}" data-step="{current}" data-active="{active or ""}"'
            f' style="overflow:auto"><div style="font:bold 13px sans-serif">{html.escape(title)}</div>'
            f'{notes}{svg}</div>')


_instances = itertools.count()


class GraphViewer(StaticView, W.VBox):
    r"""Torch's and minikernel's backward graph of the same expression, stepped through backward.

    Args:
        torch_out (torch.Tensor): the result of an expression on tensors with
            ``requires_grad=True`` (it must have a ``grad_fn``; non-scalar results get
            ``torch.ones_like`` as their gradient).
        mk_out (minikernel.Tensor, optional): the same expression computed with minikernel.
            Default: ``None`` (torch's graph only)
        params (mapping, optional): leaf names shown on AccumulateGrad nodes,
            ``{"w": w}`` or ``{"w": (w_torch, w_minikernel)}``. Default: ``None``

    Attributes:
        step (ipywidgets.IntSlider): the step shown, 1-based; ``step.observe(fn, "value")``
            calls ``fn(change: dict)`` with ``change["new"]`` the step.
        play (ipywidgets.Play): steps automatically (linked to ``step`` in the browser).
        torch_view, mk_view, table (ipywidgets.HTML): the two graphs and the step table.
        torch_graph, mk_graph (GraphInfo): the described graphs.
        torch_steps, mk_steps (list of Step): the recorded order (``mk_steps`` None
            while exercise 3.1 is a stub).

    The recording runs backward once on each graph (see the module docstring):
    build the viewer before calling ``backward()`` yourself, or use ``retain_graph=True``.

    Example::

        >>> a = torch.tensor([1., 2.], requires_grad=True)
        >>> b = minikernel.tensor([1., 2.], requires_grad=True)
        >>> viewer = GraphViewer((a * a).exp().sum(), F.sum(F.exp(F.mul(b, b))), params={"a": (a, b)})
        >>> [s.name for s in viewer.torch_steps]
        ['SumBackward0', 'ExpBackward0', 'MulBackward0', 'AccumulateGrad']
        >>> viewer.step.value = 3      # highlight MulBackward0 in both graphs
    """

    static_name = "the autograd graph viewer"

    def __init__(self, torch_out: torch.Tensor, mk_out: Optional[MkTensor] = None,
                 params: Optional[Params] = None):
        if not isinstance(torch_out, torch.Tensor):
            raise TypeError(f"torch_out must be a torch.Tensor, got {type(torch_out).__name__}")
        if mk_out is not None and not isinstance(mk_out, MkTensor):
            raise TypeError(f"mk_out must be a minikernel Tensor, got {type(mk_out).__name__}")
        self._id = next(_instances)
        self.torch_graph = describe(torch_out, params)
        self.mk_graph = None if mk_out is None else describe(mk_out, params)
        self.torch_steps: list[Step] = []
        self.mk_steps: Optional[list[Step]] = None
        self.torch_notes: list[tuple[str, str]] = []
        self.mk_notes: list[tuple[str, str]] = []
        self._record(torch_out, mk_out)
        n = max(len(self.torch_steps), len(self.mk_steps or ()), 1)
        self.step = W.IntSlider(1, min=1, max=n, description="step", continuous_update=True)
        self.play = W.Play(value=1, min=1, max=n, interval=900, description="play")
        W.jslink((self.play, "value"), (self.step, "value"))
        self.torch_view, self.mk_view, self.table = W.HTML(), W.HTML(), W.HTML()
        for widget, name in ((self.step, "step-slider"), (self.torch_view, "torch-view"),
                             (self.mk_view, "minikernel-view"), (self.table, "step-table")):
            widget.add_class(f"mk-{name}")
        panes = [self.torch_view] + ([self.mk_view] if self.mk_graph is not None else [])
        super().__init__([W.HBox([self.play, self.step]), W.HBox(panes), self.table])
        self.add_class("mk-graph-viewer")
        self.step.observe(lambda change: self._draw(), "value")
        self._draw()

    def _record(self, torch_out: torch.Tensor, mk_out: Optional[MkTensor]) -> None:
        """Run each backward once with pre-hooks; turn stubs and freed graphs into message lines."""
        try:
            self.torch_steps = torch_steps(torch_out, self.torch_graph)
        except RuntimeError as exc:
            self.torch_notes.append(("error", f"torch's backward failed: {exc}"))
        if mk_out is None:
            return
        try:
            self.mk_steps, stopped = minikernel_steps(mk_out, self.mk_graph)
            if stopped is not None:
                self.mk_notes.append(("todo", finish_message(stopped, "to see the gradients arriving at "
                                                                      "each node")))
        except NotImplementedError as exc:
            if not stub_exercise_id(exc):
                raise
            self.mk_notes.append(("todo", finish_message(exc, "to step through minikernel's backward")))
        except Exception as exc:  # a readable line, never a traceback
            self.mk_notes.append(("error", f"minikernel's backward failed: {type(exc).__name__}: {exc}"))
        if self.mk_steps is not None and [s.name for s in self.mk_steps] != [s.name for s in self.torch_steps]:
            self.mk_notes.append(("warn", f"minikernel runs {len(self.mk_steps)} nodes in a different order "
                                          f"from torch's {len(self.torch_steps)}: compare the table below"))

    def _draw(self) -> None:
        k = self.step.value - 1
        self.torch_view.value = pane_html(self.torch_graph, self.torch_steps, k, "torch", f"t{self._id}",
                                          self.torch_notes)
        if self.mk_graph is not None:
            self.mk_view.value = pane_html(self.mk_graph, self.mk_steps, k, "minikernel", f"m{self._id}",
                                           self.mk_notes)
        self.table.value = steps_html(self.torch_steps, self.mk_steps, k)


def graph_viewer(torch_out: torch.Tensor, mk_out: Optional[MkTensor] = None,
                 params: Optional[Params] = None) -> GraphViewer:
    """``GraphViewer(torch_out, mk_out, params)``: the same arguments, for symmetry with the other views."""
    return GraphViewer(torch_out, mk_out, params)
