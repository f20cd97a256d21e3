"""hiddenlayer 0.3 on current torch: a new graph importer, and graphviz without the Python package.

``hiddenlayer.build_graph(model, args)`` draws a network as a chain of layers
(Conv, Relu, MaxPool, Linear ...) with their output shapes. Its PyTorch importer
needs ``torch.onnx._optimize_trace``, which no longer exists, so on torch 2.x it
fails. ``install()`` replaces ``hiddenlayer.pytorch_builder.import_graph`` with
``hiddenlayer_import.import_graph`` (torch.fx + ShapeProp, jit-trace fallback),
after which hiddenlayer's own transforms and themes work as before.

hiddenlayer renders through the ``graphviz`` Python package; where that is
missing, ``install()`` lends it a small ``Digraph`` that calls the ``dot``
program. Node ids in the drawing are renumbered ``n0, n1, ...`` so the same
model gives the same SVG every time. ``compare_html`` puts hiddenlayer's layer
view beside the autograd graph torchviz's ``make_dot`` draws.
"""
from __future__ import annotations

import contextlib
import copy
import importlib.util
import os
import re
import sys
import types
from typing import Any, Iterator, Optional

from torch import nn

from .graph_render import graph_svg, missing_graphviz_errors, run_dot, stored_or_note
from .hiddenlayer_import import FUNCTION_OPS, MODULE_OPS, import_graph

# ------------------------------------------------------------------ rendering
def _dot_id(value: Any) -> str:
    """graphviz Python's quoting: ``<...>`` stays an HTML label, anything else is a quoted string."""
    text = str(value)
    if text.startswith("<") and text.endswith(">"):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Digraph:
    """The part of ``graphviz.Digraph`` hiddenlayer and torchviz use, rendered with ``dot``."""

    def __init__(self, name: str = "", format: str = "svg", **_: Any):
        self.name, self.format, self.body = name, format, []

    def _attrs(self, attrs: dict) -> str:
        pairs = [f"{k}={_dot_id(v)}" for k, v in attrs.items() if v is not None]
        return f" [{' '.join(pairs)}]" if pairs else ""

    def attr(self, kw: Optional[str] = None, **attrs: Any) -> None:
        self.body.append(f"\t{kw}{self._attrs(attrs)}" if kw else "\t" + " ".join(
            f"{k}={_dot_id(v)}" for k, v in attrs.items()))

    def node(self, name: str, label: Optional[str] = None, **attrs: Any) -> None:
        self.body.append(f"\t{_dot_id(name)}{self._attrs({'label': label, **attrs})}")

    def edge(self, tail: str, head: str, label: Optional[str] = None, **attrs: Any) -> None:
        self.body.append(f"\t{_dot_id(tail)} -> {_dot_id(head)}{self._attrs({'label': label, **attrs})}")

    @property
    def source(self) -> str:
        return "digraph " + (_dot_id(self.name) + " " if self.name else "") + "{\n" + "\n".join(self.body) + "\n}\n"

    def pipe(self, format: Optional[str] = None, encoding: Optional[str] = None):
        out = run_dot(self.source, format or self.format)
        return out if encoding else out.encode()

    def _repr_svg_(self) -> str:
        return run_dot(self.source, "svg")

    def render(self, filename: str = "graph", directory: str = "", cleanup: bool = False, **_: Any) -> str:
        path = os.path.join(directory or ".", f"{filename}.{self.format}")
        with open(path, "w") as f:
            f.write(run_dot(self.source, self.format))
        return path


@contextlib.contextmanager
def graphviz_module() -> Iterator[None]:
    """While inside, ``import graphviz`` gives this module's ``Digraph`` if the package is missing."""
    if "graphviz" in sys.modules or importlib.util.find_spec("graphviz") is not None:
        yield
        return
    sys.modules["graphviz"] = types.SimpleNamespace(Digraph=Digraph, __name__="graphviz")
    try:
        yield
    finally:
        sys.modules.pop("graphviz", None)


def _build_dot(self):
    """hiddenlayer's ``Graph.build_dot`` on a copy with ids n0, n1, ... (random ids make random SVG)."""
    ids = {k: f"n{i}" for i, k in enumerate(self.nodes)}
    renamed = copy.copy(self)
    renamed.nodes = {ids[k]: n for k, n in self.nodes.items()}
    renamed.edges = [(ids[a], ids[b], label) for a, b, label in self.edges if a in ids and b in ids]
    with graphviz_module():
        return _ORIGINAL_BUILD_DOT(renamed)


def _repr_svg(self) -> str:
    """Jupyter's display of a ``hiddenlayer.Graph``: its SVG through ``pipe``."""
    return self.build_dot().pipe(format="svg", encoding="utf-8")


_ORIGINAL_BUILD_DOT = None


def install():
    """Point hiddenlayer at ``import_graph`` and a deterministic, graphviz-optional ``build_dot``.

    Idempotent. Returns the ``hiddenlayer`` module.

    Example::

        >>> hl = install()
        >>> model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(144, 2))
        >>> sorted(n.op for n in hl.build_graph(model, torch.zeros(1, 1, 8, 8)).nodes.values())
        ['ConvRelu', 'Flatten', 'Linear']
    """
    global _ORIGINAL_BUILD_DOT
    import hiddenlayer as hl
    import hiddenlayer.pytorch_builder as builder

    builder.import_graph = import_graph
    if _ORIGINAL_BUILD_DOT is None:
        _ORIGINAL_BUILD_DOT = hl.Graph.build_dot
        hl.Graph.build_dot = _build_dot
        hl.Graph._repr_svg_ = _repr_svg  # graphviz >= 0.19's Digraph has no _repr_svg_
    return hl


def build_graph(model: nn.Module, args, transforms="default", framework_transforms="default",
                method: str = "auto"):
    """``hiddenlayer.build_graph`` with the importer's ``method`` exposed (see ``import_graph``).

    ``transforms=None`` keeps every layer (no ``ConvRelu`` folding). Returns a ``hiddenlayer.Graph``.
    """
    hl = install()
    from hiddenlayer.pytorch_builder import FRAMEWORK_TRANSFORMS
    from hiddenlayer.transforms import SIMPLICITY_TRANSFORMS

    graph = import_graph(hl.Graph(), model, args, method=method)
    chosen = (FRAMEWORK_TRANSFORMS if framework_transforms == "default" else framework_transforms or [])
    chosen = list(chosen) + list(SIMPLICITY_TRANSFORMS if transforms == "default" else transforms or [])
    for t in chosen:
        graph = t.apply(graph)
    return graph


def hl_svg(graph) -> str:
    """The SVG of a ``hiddenlayer.Graph`` (its own theme and layout)."""
    install()
    return run_dot(graph.build_dot().source, "svg")  # the shim's and graphviz 0.21's Digraph both have source


def torchviz_available() -> bool:
    """Whether ``torchviz`` (for ``make_dot``) is installed."""
    return importlib.util.find_spec("torchviz") is not None


def make_dot_svg(out, params: Optional[dict] = None) -> str:
    """torchviz's ``make_dot(out, params)`` as SVG, the same every run.

    torchviz names each node ``str(id(...))``, a memory address; they are renamed
    ``n0, n1, ...`` in order of appearance before ``dot`` lays the graph out, so the
    drawing does not change from run to run. Blue boxes are the tensors in
    ``params`` (with their names), grey ones autograd nodes, green the output.

    Example::

        >>> w = torch.ones(2, requires_grad=True)
        >>> "MulBackward0" in make_dot_svg((w * 3).sum(), {"w": w})
        True
    """
    from torchviz import make_dot

    ids: dict[str, str] = {}
    with graphviz_module():
        source = make_dot(out, params=params).source
    source = re.sub(r"\b\d{9,}\b", lambda m: ids.setdefault(m.group(), f"n{len(ids)}"), source)
    svg = run_dot(source, "svg")
    return svg[svg.index("<svg"):]


def autograd_compare_html(out, params: Optional[dict] = None) -> str:
    """torchviz's drawing of ``out``'s autograd graph beside ``widgets.graph_svg``'s, as one HTML block.

    Without graphviz's ``dot``: the course's stored drawings under a one-line note
    (``graph_render.stored_or_note``), or the note alone for a graph it did not store.
    """
    try:
        return _autograd_compare_html(out, params, graph_svg)
    except missing_graphviz_errors():
        return stored_or_note(lambda: _autograd_compare_html(out, params, graph_svg))


def _autograd_compare_html(out, params: Optional[dict], graph_svg) -> str:
    pane = '<div data-view="{}" style="margin-right:1em"><div style="font:bold 13px sans-serif">{}</div>{}</div>'
    return (f'<div class="mk-autograd-compare" style="display:flex;align-items:flex-start;overflow:auto">'
            f'{pane.format("torchviz", "torchviz make_dot", make_dot_svg(out, params))}'
            f'{pane.format("graph_svg", "widgets.graph_svg", graph_svg(out, params=params, prefix="tvz"))}</div>')


def compare_html(model: nn.Module, args, transforms="default") -> str:
    """hiddenlayer's layer view beside the autograd graph of ``model(*args)``, as one HTML block.

    The right side is torchviz's ``make_dot`` when torchviz is installed, else
    ``graph_svg`` (the same backward graph, drawn by this package) with a note
    saying so. Returns ``<div class="mk-hl-compare">`` holding two
    ``<div data-view="hiddenlayer|torchviz|graph_svg">`` panes. Without graphviz's
    ``dot``: the stored drawings under a one-line note, or the note alone (see above).
    """
    try:
        return _compare_html(model, args, transforms, graph_svg)
    except missing_graphviz_errors():
        return stored_or_note(lambda: _compare_html(model, args, transforms, graph_svg))


def _compare_html(model: nn.Module, args, transforms, graph_svg) -> str:
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    left = hl_svg(build_graph(model, args, transforms=transforms))
    out = model(*args)
    params = dict(model.named_parameters())
    if torchviz_available():
        view, right, note = "torchviz", make_dot_svg(out, params), "torchviz make_dot: the autograd graph"
    else:
        view, right = "graph_svg", graph_svg(out, params=params, prefix="cmp")
        note = "torchviz is not installed: the same autograd graph drawn by widgets.graph_svg"
    pane = '<div data-view="{}" style="margin-right:1em"><div style="font:bold 13px sans-serif">{}</div>{}</div>'
    return (f'<div class="mk-hl-compare" style="display:flex;align-items:flex-start;overflow:auto">'
            f'{pane.format("hiddenlayer", "hiddenlayer: layers and output shapes", left)}'
            f'{pane.format(view, note, right)}</div>')


__all__ = ["install", "import_graph", "build_graph", "hl_svg", "compare_html", "torchviz_available",
           "make_dot_svg", "autograd_compare_html",
           "Digraph", "graphviz_module", "MODULE_OPS", "FUNCTION_OPS"]
