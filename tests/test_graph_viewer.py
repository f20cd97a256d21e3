"""The graph viewer (widgets/graph_render.py, widgets/graph_viewer.py), without a browser.

Torch is the oracle. The SVG is read back through its ``data-`` attributes and
matched node for node, edge for edge, against torch's own ``grad_fn`` /
``next_functions`` walk; the viewer's step list is compared with the order in
which torch's engine calls node post-hooks (a different hook than the viewer
records with). No exercise marker: with the references on, minikernel's steps
must equal torch's; in student mode the minikernel side must name exercise 3.1
instead of raising.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import minikernel
import minikernel.autograd.engine as A
from minikernel.autograd import functions as F
from minikernel.course.exercise import uses_reference
from widgets import GraphViewer, graph_svg
from widgets import graph_render
from widgets.graph_steps import grad_text, minikernel_steps, record_steps
from widgets.graph_viewer import steps_html
from widgets.graph_render import describe

#: everything minikernel's backward of EXPRESSIONS needs (order, engine, op backwards)
ENGINE = ("3.1", "3.2", "3.3", "3.4", "3.5", "3.6")
REFERENCE = all(uses_reference(i) for i in ENGINE)
NODE_RE = re.compile(r'<g id="\w+" class="node mk-node" ([^>]*)>')
EDGE_RE = re.compile(r'<g id="\w+_e(\d+)" class="edge mk-edge" data-src="(n\d+)" data-dst="(n\d+)" '
                     r'data-input="(\d+)">')
ATTR_RE = re.compile(r'(data-[\w-]+)="([^"]*)"')


def _leaves(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(2, 3, generator=g, requires_grad=True)
    b = torch.randn(3, generator=g, requires_grad=True)
    w = torch.randn(3, 4, generator=g, requires_grad=True)
    mk = [minikernel.Tensor.from_torch(t.detach().clone()).requires_grad_() for t in (a, b, w)]
    return (a, b, w), mk


#: one expression, written for torch and for minikernel (with minikernel.autograd.functions)
EXPRESSIONS = {
    "mul-exp-sum": (lambda a, b, w: (a * b).exp().sum(),
                    lambda a, b, w: F.sum(F.exp(F.mul(a, b)))),
    "diamond": (lambda a, b, w: ((c := a * 2) * c + c).sum(),  # c is used three times
                lambda a, b, w: F.sum(F.add(F.mul(c := F.mul(a, 2), c), c))),
    "reused-leaf": (lambda a, b, w: (a * b).exp().sum() + (a * a).sum(),
                    lambda a, b, w: F.add(F.sum(F.exp(F.mul(a, b))), F.sum(F.mul(a, a)))),
    "matmul-relu-mean": (lambda a, b, w: (a - b).matmul(w).relu().mean(),
                         lambda a, b, w: F.mean(F.relu(F.matmul(F.sub(a, b), w)))),
    "non-scalar": (lambda a, b, w: (a / (b * b + 1)).tanh(),
                   lambda a, b, w: F.tanh(F.div(a, F.add(F.mul(b, b), 1)))),
}


def build(name: str, seed: int = 0):
    (a, b, w), (ma, mb, mw) = _leaves(seed)
    torch_fn, mk_fn = EXPRESSIONS[name]
    return torch_fn(a, b, w), mk_fn(ma, mb, mw), {"a": (a, ma), "b": (b, mb), "w": (w, mw)}


def read_svg(svg: str) -> tuple[dict[str, dict], list[tuple[str, str, int]]]:
    """({uid: data attributes} of the nodes, [(src, dst, input_nr)] of the edges in drawing order)."""
    nodes = {}
    for attrs in NODE_RE.findall(svg):
        a = dict(ATTR_RE.findall(attrs))
        nodes[a["data-node"]] = a
    edges = sorted((int(k), s, d, int(nr)) for k, s, d, nr in EDGE_RE.findall(svg))
    return nodes, [(s, d, nr) for _, s, d, nr in edges]


def torch_name(node) -> str:
    return node.name().replace("torch::autograd::", "")


def match_graph(svg: str, root) -> dict[str, object]:
    """Pair every drawn node with the torch/minikernel node it stands for, checking names, leaf
    shapes and every edge against ``next_functions``; returns {uid: node}."""
    nodes, edges = read_svg(svg)
    out_edges: dict[str, list[tuple[str, int]]] = {}
    for s, d, nr in edges:
        out_edges.setdefault(s, []).append((d, nr))
    paired: dict[str, object] = {"n0": root}
    todo = ["n0"]
    while todo:
        uid = todo.pop()
        node, drawn = paired[uid], nodes[uid]
        assert drawn["data-name"] == torch_name(node)
        variable = getattr(node, "variable", None)
        if variable is not None:
            assert drawn["data-leaf-shape"] == ", ".join(str(s) for s in variable.shape)
        else:
            assert "data-leaf-shape" not in drawn
        nexts = [(n, nr) for n, nr in node.next_functions if n is not None]
        assert len(out_edges.get(uid, [])) == len(nexts), f"{uid} {drawn['data-name']}: edges"
        for (dst, nr), (n, want_nr) in zip(out_edges.get(uid, []), nexts):
            assert nr == want_nr
            if dst in paired:
                assert paired[dst] is n, f"{dst} stands for two different nodes"
            else:
                paired[dst] = n
                todo.append(dst)
    assert set(paired) == set(nodes), "nodes drawn that the root does not reach"
    assert len({id(n) for n in paired.values()}) == len(paired), "one node drawn twice"
    return paired


def reachable(root) -> int:
    seen, todo = set(), [root]
    while todo:
        n = todo.pop()
        if id(n) not in seen:
            seen.add(id(n))
            todo += [m for m, _ in n.next_functions if m is not None]
    return len(seen)


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_svg_draws_torchs_graph_node_for_node(name):
    out, _, params = build(name)
    svg = graph_svg(out, params=params)
    paired = match_graph(svg, out.grad_fn)
    assert len(paired) == reachable(out.grad_fn)
    assert svg.count('class="node mk-node"') == len(paired)
    assert "torch::autograd" not in svg and svg.startswith("<svg")
    names = {id(p[0]): n for n, p in params.items()}
    drawn, _ = read_svg(svg)
    for uid, node in paired.items():  # leaves carry their params name
        if getattr(node, "variable", None) is not None:
            assert drawn[uid]["data-leaf-name"] == names[id(node.variable)]


def test_saved_tensors_shapes_are_shown():
    a = torch.ones(2, 3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    y = (a * b).exp()
    nodes, _ = read_svg(graph_svg(y.sum()))
    saved = {n["data-name"]: n["data-saved"] for n in nodes.values()}
    assert saved["MulBackward0"] == f"self {tuple(y.grad_fn.next_functions[0][0]._saved_self.shape)}; other (3,)"
    assert saved["ExpBackward0"] == "result (2, 3)"
    assert saved["SumBackward0"] == "self_sym_sizes = (2, 3)"
    ma, mb = minikernel.tensor([[1.0] * 3] * 2, requires_grad=True), minikernel.tensor([1.0] * 3, requires_grad=True)
    mk_nodes, _ = read_svg(graph_svg(F.sum(F.exp(F.mul(ma, mb)))))
    mk_saved = {n["data-name"]: n["data-saved"] for n in mk_nodes.values()}
    assert mk_saved["MulBackward0"] == "saved[0] (2, 3); saved[1] (3,)"


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_minikernel_graph_has_torchs_structure(name):
    """Building a graph needs no exercise: both modes draw the same nodes and edges as torch."""
    out, mk_out, params = build(name)
    t_nodes, t_edges = read_svg(graph_svg(out, params=params))
    m_nodes, m_edges = read_svg(graph_svg(mk_out, params=params))
    match_graph(graph_svg(mk_out, params=params), mk_out.grad_fn)
    assert m_edges == t_edges
    keys = ("data-name", "data-leaf-shape", "data-leaf-name")
    assert {u: [n.get(k) for k in keys] for u, n in m_nodes.items()} == \
        {u: [n.get(k) for k in keys] for u, n in t_nodes.items()}


def torch_order(out: torch.Tensor) -> list[tuple[str, tuple]]:
    """The oracle: (name, incoming gradients) in the order torch's engine calls node post-hooks."""
    ran, handles, seen, todo = [], [], set(), [out.grad_fn]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        handles.append(node.register_hook(
            lambda gi, go, node=node: ran.append((torch_name(node), tuple(
                None if g is None else g.detach().numpy().copy() for g in go)))))
        todo += [n for n, _ in node.next_functions if n is not None]
    out.backward(torch.ones_like(out), retain_graph=True)
    for h in handles:
        h.remove()
    return ran


def same_grads(a, b) -> bool:
    return len(a) == len(b) and all((x is None and y is None) or (x is not None and y is not None and x.shape
                                    == y.shape and np.allclose(x, y, rtol=1e-4, atol=1e-6)) for x, y in zip(a, b))


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_steps_follow_torchs_execution_order(name):
    out, mk_out, params = build(name)
    viewer = GraphViewer(out, mk_out, params)
    steps = viewer.torch_steps
    for leaf, _ in params.values():
        assert leaf.grad is None  # recording put .grad back as it was
    oracle = torch_order(out)
    assert [s.name for s in steps] == [n for n, _ in oracle]
    assert all(same_grads(s.grads, g) for s, (_, g) in zip(steps, oracle))
    rows = re.findall(r'<tr class="mk-step" data-step="(\d+)" data-torch="(\w*)" data-minikernel="(\w*)" '
                      r'data-match="([01]?)"', viewer.table.value)
    assert [r[1] for r in rows] == [n for n, _ in oracle]
    if not uses_reference("3.1"):
        assert viewer.mk_steps is None
        assert "Finish exercise 3.1 (topological_order) to step through minikernel&#x27;s backward" \
            in viewer.mk_view.value
        assert 'data-state="active"' not in viewer.mk_view.value
        assert all(r[2] == "" for r in rows)
    elif REFERENCE:
        assert [s.name for s in viewer.mk_steps] == [n for n, _ in oracle]
        assert all(same_grads(s.grads, g) for s, (_, g) in zip(viewer.mk_steps, oracle))
        assert [r[3] for r in rows] == ["1"] * len(oracle)
        assert 'class="mk-todo"' not in viewer.mk_view.value and 'class="mk-warn"' not in viewer.mk_view.value
        for leaf in (p[1] for p in params.values()):
            assert leaf.grad is None


def test_engine_stub_still_shows_the_order(monkeypatch):
    """Exercise 3.1 done but not 3.3: minikernel's side shows 3.1's order and names 3.3."""
    out, mk_out, params = build("diamond")
    if not uses_reference("3.1"):
        with pytest.raises(NotImplementedError, match=r"exercise 3\.1 \(topological_order\)"):
            minikernel_steps(mk_out, describe(mk_out))
        return

    def stub(*args, **kwargs):
        raise NotImplementedError("exercise 3.3 (run_backward) is not implemented yet")

    monkeypatch.setattr(A, "run_backward", stub)
    viewer = GraphViewer(out, mk_out, params)
    assert [s.name for s in viewer.mk_steps] == [s.name for s in viewer.torch_steps]
    assert all(s.grads is None for s in viewer.mk_steps)
    assert "Finish exercise 3.3 (run_backward) to see the gradients arriving at each node" in viewer.mk_view.value
    viewer.step.value = 2
    active = re.findall(r'data-name="(\w+)" data-state="active"', viewer.mk_view.value)
    assert active == [viewer.torch_steps[1].name]


def test_slider_highlights_the_running_node():
    out, mk_out, params = build("reused-leaf")
    viewer = GraphViewer(out, mk_out, params)
    n = len(viewer.torch_steps)
    assert (viewer.step.min, viewer.step.max) == (1, n)
    for k in range(1, n + 1):
        viewer.step.value = k
        for view, steps in ((viewer.torch_view.value, viewer.torch_steps), (viewer.mk_view.value, viewer.mk_steps)):
            if steps is None:
                continue
            nodes, _ = read_svg(view)
            active = [u for u, a in nodes.items() if a["data-state"] == "active"]
            done = {u for u, a in nodes.items() if a["data-state"] == "done"}
            assert active == [steps[k - 1].uid] and nodes[active[0]]["data-name"] == steps[k - 1].name
            assert done == {s.uid for s in steps[:k - 1]} - set(active)
        assert re.findall(r'data-step="(\d+)"[^>]*data-current="1"', viewer.table.value) == [str(k - 1)]


def test_existing_grads_are_left_alone():
    out, mk_out, params = build("mul-exp-sum")
    a = params["a"][0]
    a.grad = torch.full_like(a, 7.0)
    kept = a.grad
    GraphViewer(out, mk_out, params)
    assert a.grad is kept and torch.equal(a.grad, torch.full_like(a, 7.0))


def test_freed_graph_and_bad_input_are_messages_or_clear_errors():
    out, _, _ = build("mul-exp-sum")
    out.backward()
    viewer = GraphViewer(out)
    assert "torch&#x27;s backward failed: Trying to backward through the graph a second time" in \
        viewer.torch_view.value
    assert "(freed)" in viewer.torch_view.value
    with pytest.raises(ValueError, match="does not require grad"):
        GraphViewer(torch.ones(2))
    with pytest.raises(ValueError, match="is a leaf"):
        graph_svg(torch.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="mk_out must be a minikernel Tensor"):
        GraphViewer(out, out)
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(graph_render.MAX_NODES + 1):
        y = y * 1.0
    with pytest.raises(ValueError, match=f"more than {graph_render.MAX_NODES} nodes"):
        graph_svg(y)
    with pytest.raises(ValueError, match="prefix"):
        graph_svg(out, prefix="has-dash")


def test_missing_dot_is_named(monkeypatch):
    out, _, _ = build("mul-exp-sum")
    monkeypatch.setattr(graph_render.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="graphviz's `dot` is not on PATH"):
        graph_svg(out)
    assert "graphviz&#x27;s `dot` is not on PATH" in GraphViewer(out).torch_view.value


def test_record_steps_and_grad_text():
    x = torch.ones(3, requires_grad=True)
    steps = record_steps((x * 2).sum())
    assert [(s.name, grad_text(s.grads[0])) for s in steps] == [
        ("SumBackward0", "() [1]"), ("MulBackward0", "(3,) [1, 1, 1]"), ("AccumulateGrad", "(3,) [2, 2, 2]")]
    assert grad_text(np.arange(6.0).reshape(2, 3)) == "(2, 3) [0, 1, 2, 3, …]"
    assert grad_text(None) == "None"
    mx = minikernel.tensor([1.0, 1.0, 1.0], requires_grad=True)
    if uses_reference("3.1") and REFERENCE:
        assert [s.name for s in record_steps(F.sum(F.mul(mx, 2)))] == [s.name for s in steps]
    else:
        with pytest.raises(NotImplementedError, match=r"exercise 3\.\d"):
            record_steps(F.sum(F.mul(mx, 2)))
    assert "<table" in steps_html(steps, None, 0)
