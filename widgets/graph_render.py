"""Draw an autograd graph, torch's or minikernel's, as graphviz SVG.

``y.grad_fn`` is the node that will compute the gradient of ``y``'s inputs. Its
``next_functions`` are the edges of the backward graph: one ``(node, input_nr)``
per input of the forward op, ``(None, 0)`` when that input needs no gradient.
Leaves that require grad end in an ``AccumulateGrad`` node whose ``variable`` is
the leaf. Torch and minikernel name their nodes alike (``MulBackward0``), so
the same walk describes both graphs:

* torch nodes expose what they saved as ``_saved_*`` attributes
  (``_saved_self``, ``_saved_other``, ``_saved_result``; sizes and dims too), and
  a custom ``Function``'s node as ``saved_tensors``;
* minikernel's ``BackwardNode`` keeps ``_saved``, a list of ``SavedTensor``
  (``.tensor``), set to None once backward has freed them.

Edges point the way gradients flow: from a node to its ``next_functions``.
Everything here is a plain function of the graph; ``dot`` (graphviz) turns the
text into SVG, and every node's ``<g>`` carries ``data-`` attributes (name,
state, leaf shape, saved tensors) so a test can read the picture back.
"""
from __future__ import annotations

import html
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import torch

from minikernel.autograd.function import BackwardNode as MkBackwardNode
from minikernel.autograd.graph import Node as MkNode
from minikernel.tensor import Tensor as MkTensor

from . import stored_figures

MAX_NODES = 200  #: the largest graph drawn (dot takes seconds past a few hundred nodes)
AnyTensor = Union[torch.Tensor, MkTensor]
Params = Mapping[str, Union[AnyTensor, Sequence[AnyTensor]]]  #: name -> leaf (or (torch leaf, mk leaf))

FILL = {"pending": "#e8e8e8", "leaf": "#cfe2ff", "done": "#c8e6c9", "active": "#ffb74d"}
_TORCH_PREFIX = "torch::autograd::"


@dataclass
class NodeInfo:
    """One node of a backward graph, as drawn."""

    uid: str                         #: "n0", "n1", ... in walk order from the root
    name: str                        #: torch's name: "MulBackward0", "AccumulateGrad"
    node: Any = field(repr=False)    #: the torch or minikernel node itself
    saved: list[str] = field(default_factory=list)  #: "self (2, 3)", "dim = 0", "(freed)"
    leaf_shape: Optional[tuple[int, ...]] = None    #: the variable's shape, for AccumulateGrad
    leaf_name: str = ""              #: from ``params``, else "variable"
    edges: list[tuple[str, int]] = field(default_factory=list)  #: (next node uid, input_nr)


@dataclass
class GraphInfo:
    """Every node reachable from a root, in walk order (root first)."""

    side: str                        #: "torch" or "minikernel"
    nodes: list[NodeInfo]

    def uid_of(self, node: Any) -> Optional[str]:
        """The uid of a node object of this graph, None if it is not in it."""
        return self._by_id().get(id(node))

    def _by_id(self) -> dict[int, str]:
        if not hasattr(self, "_ids"):
            self._ids = {id(n.node): n.uid for n in self.nodes}
        return self._ids


def node_name(node: Any) -> str:
    """``node.name()`` without torch's C++ namespace: "torch::autograd::AccumulateGrad" -> "AccumulateGrad"."""
    name = node.name()
    return name[len(_TORCH_PREFIX):] if name.startswith(_TORCH_PREFIX) else name


def shape_text(shape: Iterable[int]) -> str:
    """(2, 3) -> "(2, 3)", () -> "()" (a scalar), (3,) -> "(3,)": Python's tuple repr."""
    return repr(tuple(int(s) for s in shape))


def _value_text(value: Any) -> str:
    """A short text for a saved value that is not a tensor (a size, a dim, a scalar)."""
    if isinstance(value, (torch.Size, list)):
        value = tuple(value)
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def saved_lines(node: Any) -> list[str]:
    """What a node saved for backward, one line each: "self (2, 3)" for a tensor, "dim = 0" otherwise.

    torch: the ``_saved_*`` attributes, or ``saved_tensors`` of a custom Function's
    node; minikernel: ``node._saved``. "(freed)" once backward has released them.
    """
    if isinstance(node, MkBackwardNode):
        if node._saved is None:
            return ["(freed)"]
        return [f"saved[{i}] " + ("None" if s is None else shape_text(s.tensor.shape))
                for i, s in enumerate(node._saved)]
    lines = []
    names = sorted((a for a in dir(node) if a.startswith("_saved_") and not a.endswith("_raw")),
                   key=lambda a: (a != "_saved_self", a != "_saved_other", a))  # torch's argument order
    for attr in names:
        try:
            value = getattr(node, attr)
        except RuntimeError:  # torch frees saved variables after backward without retain_graph
            return ["(freed)"]
        label = attr[len("_saved_"):]
        if isinstance(value, torch.Tensor):
            lines.append(f"{label} {shape_text(value.shape)}")
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
            lines.append(f"{label} [{', '.join(shape_text(v.shape) for v in value)}]")
        else:
            lines.append(f"{label} = {_value_text(value)}")
    if not names and hasattr(node, "saved_tensors") and not isinstance(node, MkTensor):
        try:
            lines = [f"saved[{i}] " + ("None" if t is None else shape_text(t.shape))
                     for i, t in enumerate(node.saved_tensors)]
        except RuntimeError:
            lines = ["(freed)"]
    return lines


def _param_names(params: Optional[Params]) -> dict[int, str]:
    """id(leaf) -> name, accepting ``{"w": w}`` or ``{"w": (w_torch, w_mk)}``."""
    names: dict[int, str] = {}
    for name, value in (params or {}).items():
        for t in (value if isinstance(value, (tuple, list)) else (value,)):
            names[id(t)] = name
    return names


def root_node(root: Any) -> Any:
    """The node a drawing starts from: ``root.grad_fn`` of a tensor, or ``root`` if it is a node."""
    if isinstance(root, (torch.Tensor, MkTensor)):
        if root.grad_fn is None:
            why = ("is a leaf" if root.requires_grad else "does not require grad")
            raise ValueError(f"this tensor {why}, so it has no grad_fn to draw: pass the result of an "
                             "operation on tensors with requires_grad=True")
        return root.grad_fn
    if not hasattr(root, "next_functions"):
        raise TypeError(f"expected a torch or minikernel tensor (or a grad_fn node), got {type(root).__name__}")
    return root


def describe(root: Any, params: Optional[Params] = None) -> GraphInfo:
    """Walk the graph behind ``root`` (depth first, first input first, no recursion).

    Args:
        root: a torch or minikernel tensor with a ``grad_fn``, or a node.
        params (mapping, optional): names for leaves, ``{"w": w}`` or
            ``{"w": (w_torch, w_mk)}``, shown on their AccumulateGrad. Default: ``None``

    Example::

        >>> a = torch.ones(2, 3, requires_grad=True)
        >>> [n.name for n in describe((a * 2).sum()).nodes]
        ['SumBackward0', 'MulBackward0', 'AccumulateGrad']
    """
    start = root_node(root)
    side = "minikernel" if isinstance(start, MkNode) else "torch"
    names = _param_names(params)
    uid: dict[int, str] = {}
    order: list[Any] = []
    stack = [start]
    while stack:
        node = stack.pop()
        if id(node) in uid:
            continue
        uid[id(node)] = f"n{len(order)}"
        order.append(node)
        if len(order) > MAX_NODES:
            raise ValueError(f"the graph has more than {MAX_NODES} nodes; draw a smaller expression")
        stack.extend(n for n, _ in reversed(node.next_functions) if n is not None and id(n) not in uid)
    infos = []
    for node in order:
        info = NodeInfo(uid[id(node)], node_name(node), node, saved_lines(node),
                        edges=[(uid[id(n)], nr) for n, nr in node.next_functions if n is not None])
        variable = getattr(node, "variable", None)
        if variable is not None:
            info.leaf_shape = tuple(variable.shape)
            info.leaf_name = names.get(id(variable), "variable")
        infos.append(info)
    return GraphInfo(side, infos)


def _quote(text: str) -> str:
    """A DOT string; a newline in ``text`` becomes a line break of the label."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: GraphInfo, active: Optional[str] = None, done: Iterable[str] = (), title: str = "",
           prefix: str = "g") -> str:
    """The graph as graphviz text: one box per node, one arrow per ``next_functions`` edge.

    ``active`` (a uid) is filled orange, ``done`` green, AccumulateGrad leaves blue,
    the rest grey. Element ids are ``{prefix}_{uid}`` and ``{prefix}_e{k}``.
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", prefix):
        raise ValueError(f"prefix {prefix!r} must be a letter followed by letters, digits or '_'")
    done = set(done)
    lines = [f"digraph {_quote(graph.side)} {{",
             '  graph [rankdir=TB nodesep=0.25 ranksep=0.35 fontname="DejaVu Sans" fontsize=12'
             + (f" label={_quote(title)} labelloc=t" if title else "") + "];",
             '  node [shape=box style="rounded,filled" fontname="DejaVu Sans" fontsize=11 margin="0.12,0.06"];',
             '  edge [arrowsize=0.7 color="#555555"];']
    for n in graph.nodes:
        label = [n.name]
        if n.leaf_shape is not None:
            label.append(f"{n.leaf_name} {shape_text(n.leaf_shape)}")
        label += n.saved
        state = "active" if n.uid == active else "done" if n.uid in done else (
            "leaf" if n.leaf_shape is not None else "pending")
        lines.append(f"  {n.uid} [id={_quote(f'{prefix}_{n.uid}')} label={_quote(chr(10).join(label))} "
                     f"tooltip={_quote(' | '.join(label))} fillcolor={_quote(FILL[state])}"
                     + (" penwidth=2.5" if state == "active" else "") + "];")
    k = 0
    for n in graph.nodes:
        for dst, nr in n.edges:
            lines.append(f"  {n.uid} -> {dst} [id={_quote(f'{prefix}_e{k}')} tooltip="
                         f"{_quote(f'{n.name} -> input {nr} of next')}];")
            k += 1
    lines.append("}")
    return "\n".join(lines)


#: The one line a picture cell shows instead of its drawing when graphviz is missing.
DOT_MISSING = ("graphviz's `dot` is not on PATH, so this picture is not drawn: install graphviz "
               "(`sudo apt-get install graphviz`, `brew install graphviz` or `conda install graphviz`; "
               "or `python3 tools/bootstrap.py --system`) and run the cell again")


#: The one line shown above a stored drawing (chapters/figures/) when graphviz is missing.
STORED_NOTE = ("graphviz's `dot` is not on PATH, so this is the picture stored with the course (drawn with the "
               "references on): to draw your own, install graphviz (`sudo apt install graphviz`, "
               "`brew install graphviz` or `conda install graphviz`) and run the cell again")


class GraphvizMissing(RuntimeError):
    """graphviz's ``dot`` is not on PATH (the message says how to install it)."""


def dot_executable() -> str:
    """The path of graphviz's ``dot``; GraphvizMissing saying how to install it if there is none."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizMissing(DOT_MISSING)
    return exe


def missing_graphviz_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean "no ``dot``": ours, and the graphviz package's ExecutableNotFound (hiddenlayer)."""
    try:
        from graphviz import ExecutableNotFound
    except ImportError:  # the package is optional (hiddenlayer_compat lends a Digraph without it)
        return (GraphvizMissing,)
    return (GraphvizMissing, ExecutableNotFound)


def note_html(text: str = DOT_MISSING) -> str:
    """``text`` as the one-line note a picture cell shows in place of its drawing."""
    return (f'<div class="mk-no-graphviz" style="font:13px sans-serif;padding:4px 8px;'
            f'border-left:3px solid #f0ad4e;background:#fff8e6">{html.escape(text)}</div>')


def run_dot(source: str, fmt: str = "svg", record: bool = True) -> str:
    """``dot -T{fmt}`` on ``source``; GraphvizMissing if graphviz is missing, RuntimeError if dot fails.

    Inside ``stored_figures.answering()`` a missing ``dot`` is answered with the stored SVG
    of ``source`` when there is one. While recording (``MINIKERNEL_RECORD_FIGURES``), each
    SVG drawn is stored, unless ``record`` is False.
    """
    if shutil.which("dot") is None and fmt == "svg" and stored_figures.is_answering():
        stored = stored_figures.lookup(source)
        if stored is not None:
            return stored
    exe = dot_executable()
    done = subprocess.run([exe, f"-T{fmt}"], input=source, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"dot failed (exit {done.returncode}): {done.stderr.strip()}")
    out = done.stdout
    if fmt != "svg":
        return out
    svg = out[out.index("<svg"):] if "<svg" in out else out  # no XML prologue inline
    if record:
        stored_figures.record(source, svg)
    return svg


def stored_or_note(draw: Callable[[], str]) -> str:
    """For a cell whose ``draw()`` found no ``dot``: the stored note and ``draw()`` answered from
    the stored drawings; the plain note (``DOT_MISSING``) if one of them is not stored."""
    try:
        with stored_figures.answering():
            return note_html(STORED_NOTE) + draw()
    except missing_graphviz_errors():
        return note_html()


def _annotate(svg: str, graph: GraphInfo, active: Optional[str], done: set, prefix: str) -> str:
    """Add ``data-`` attributes to each node's and edge's ``<g>`` (dot keeps only id and class)."""
    by_uid = {n.uid: n for n in graph.nodes}
    edges = [(n.uid, dst, nr) for n in graph.nodes for dst, nr in n.edges]

    def node_attrs(m: re.Match) -> str:
        n = by_uid[m.group(1)]
        state = "active" if n.uid == active else "done" if n.uid in done else "pending"
        attrs = {"data-node": n.uid, "data-name": n.name, "data-state": state,
                 "data-saved": "; ".join(n.saved)}
        if n.leaf_shape is not None:
            attrs["data-leaf-shape"] = ", ".join(map(str, n.leaf_shape))
            attrs["data-leaf-name"] = n.leaf_name
        extra = " ".join(f'{k}="{html.escape(v)}"' for k, v in attrs.items())
        return f'<g id="{prefix}_{n.uid}" class="node mk-node" {extra}>'

    def edge_attrs(m: re.Match) -> str:
        src, dst, nr = edges[int(m.group(1))]
        return (f'<g id="{prefix}_e{m.group(1)}" class="edge mk-edge" data-src="{src}" data-dst="{dst}" '
                f'data-input="{nr}">')

    p = re.escape(prefix)
    svg = re.sub(rf'<g id="{p}_(n\d+)" class="node">', node_attrs, svg)
    svg = re.sub(rf'<g id="{p}_e(\d+)" class="edge">', edge_attrs, svg)
    return svg.replace("<svg ", f'<svg class="mk-graph-svg" data-side="{graph.side}" '
                       f'data-nodes="{len(graph.nodes)}" data-edges="{len(edges)}" ', 1)


def render_svg(graph: GraphInfo, active: Optional[str] = None, done: Iterable[str] = (), title: str = "",
               prefix: str = "g") -> str:
    """SVG of a described graph, with ``active``/``done`` nodes coloured (see ``to_dot``)."""
    done = set(done)
    if stored_figures.recording():  # the uncoloured drawing, which stored_graph_svg looks up
        run_dot(to_dot(graph, title=title))
    svg = run_dot(to_dot(graph, active, done, title, prefix), record=not (active or done))
    return _annotate(svg, graph, active, done, prefix)


def stored_graph_svg(graph: GraphInfo, title: str = "", prefix: str = "g") -> Optional[str]:
    """The stored drawing of a described graph (uncoloured: ``render_svg`` with no ``active``
    or ``done``), its element ids made ``{prefix}_...``; None if it is not stored."""
    svg = stored_figures.lookup(to_dot(graph, title=title))
    if svg is None:
        return None
    svg = re.sub(r'id="g_((?:n|e)\d+)"', lambda m: f'id="{prefix}_{m.group(1)}"', svg)
    return _annotate(svg, graph, None, set(), prefix)


def graph_svg(root: Any, params: Optional[Params] = None, active: Optional[str] = None,
              done: Iterable[str] = (), title: str = "", prefix: str = "g") -> str:
    r"""The backward graph behind ``root`` as an SVG string (graphviz ``dot``).

    One box per node (torch's names, "AccumulateGrad" for leaves with the leaf's
    shape, then the shapes of the tensors the node saved for backward), one arrow
    per ``next_functions`` edge, in the direction gradients flow.

    Args:
        root: a torch or minikernel tensor with a ``grad_fn`` (or a node).
        params (mapping, optional): leaf names, ``{"w": w}`` or ``{"w": (w_torch, w_mk)}``.
            Default: ``None`` (leaves are called "variable")
        active (str, optional): uid ("n3") of the node to fill orange. Default: ``None``
        done (iterable of str, optional): uids to fill green. Default: ``()``
        title (str, optional): a caption above the graph. Default: ``""``
        prefix (str, optional): prefix of the SVG element ids, unique per page. Default: ``"g"``

    Returns:
        str: ``<svg class="mk-graph-svg" data-side=... data-nodes=N ...>``; each node is a
        ``<g class="node mk-node" data-node="n0" data-name="SumBackward0" data-state=...
        data-saved=...>`` (plus ``data-leaf-shape="2, 3"`` on leaves), each edge a
        ``<g class="edge mk-edge" data-src="n0" data-dst="n1" data-input="0">``.

    Example::

        >>> x = torch.ones(2, 3, requires_grad=True)
        >>> svg = graph_svg((x * x).sum(), params={"x": x})
        >>> svg.count('class="node mk-node"'), 'data-leaf-shape="2, 3"' in svg
        (3, True)
    """
    return render_svg(describe(root, params), active, done, title, prefix)
