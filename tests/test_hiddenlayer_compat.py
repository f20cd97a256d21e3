"""hiddenlayer 0.3 on current torch (widgets/hiddenlayer_compat.py).

Torch is the oracle for the shapes: each layer's output shape in the drawn graph
must equal what running the layers one by one in torch gives. Both importers
(torch.fx + ShapeProp, and the jit trace graph) must give the same layers. No
exercise marker: nothing here uses minikernel's exercises, so both modes pass.
"""
from __future__ import annotations

import re
import sys

import pytest
import torch
from torch import nn

import hiddenlayer
import hiddenlayer.pytorch_builder
from widgets import hiddenlayer_compat as hc

torch.manual_seed(0)
X = torch.randn(2, 1, 8, 8)


def small_cnn() -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 10))


def torch_shapes(model: nn.Sequential, x: torch.Tensor) -> list[tuple[int, ...]]:
    """The oracle: the output shape of every layer, running them one at a time."""
    shapes = []
    for layer in model:
        x = layer(x)
        shapes.append(tuple(x.shape))
    return shapes


def chain(graph) -> list:
    """The nodes of a graph that is a single chain, first to last (following its edges)."""
    nexts = {a: b for a, b, _ in graph.edges}
    assert len(nexts) == len(graph.edges) == len(graph.nodes) - 1, "not a chain"
    first = (set(graph.nodes) - {b for _, b, _ in graph.edges}).pop()
    out = [first]
    while out[-1] in nexts:
        out.append(nexts[out[-1]])
    return [graph.nodes[k] for k in out]


@pytest.mark.parametrize("method", ["fx", "jit"])
def test_every_layer_with_torchs_output_shape(method):
    model = small_cnn()
    graph = hc.build_graph(model, X, transforms=None, method=method)
    nodes = chain(graph)
    assert [n.op for n in nodes] == ["Conv", "Relu", "MaxPool", "Flatten", "Linear"]
    assert [n.output_shape for n in nodes] == torch_shapes(model, X)
    assert [n.title for n in nodes] == ["Conv3x3", "Relu", "MaxPool2x2/s2", "Flatten", "Linear"]
    labels = [label for _, _, label in graph.edges]  # each edge carries its source's shape
    assert sorted(labels) == sorted(torch_shapes(model, X)[:-1])


def test_hiddenlayer_build_graph_works_after_install():
    hl = hc.install()
    assert hl is hiddenlayer and hiddenlayer.pytorch_builder.import_graph is hc.import_graph
    assert hc.install() is hl  # idempotent
    model = small_cnn()
    graph = hiddenlayer.build_graph(model, X)  # hiddenlayer's own entry point and default transforms
    nodes = chain(graph)
    want = torch_shapes(model, X)
    assert [(n.op, n.output_shape) for n in nodes] == [
        ("ConvRelu", want[1]), ("MaxPool", want[2]), ("Flatten", want[3]), ("Linear", want[4])]
    assert nodes[0].name == "Conv3x3 &gt; Relu"  # hiddenlayer's Fold names the folded layers


def test_svg_is_hiddenlayers_drawing_and_the_same_every_time(tmp_path):
    hl = hc.install()
    model = small_cnn()
    svg = hc.hl_svg(hl.build_graph(model, X))
    assert svg.startswith("<svg") and svg == hc.hl_svg(hl.build_graph(model, X))
    texts = re.findall(r">([^<>]+)</text>", svg)
    for title in ("Conv3x3 &gt; Relu", "MaxPool2x2/s2", "Flatten", "Linear", "2x4x4x4", "2x64"):
        assert title in texts, title
    assert [t for t in re.findall(r"<title>([^<]*)</title>", svg) if "&" not in t] == ["%3", "n0", "n1", "n2", "n3"]
    assert hl.build_graph(model, X)._repr_svg_().count('class="node"') == 4  # Jupyter's display path
    hl.build_graph(model, X).save(str(tmp_path / "cnn"), format="svg")
    assert (tmp_path / "cnn.svg").read_text().count('class="node"') == 4


class Branchy(nn.Module):
    """BatchNorm, a residual add, a size-dependent view and a data-dependent branch."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.fc = nn.Conv2d(3, 4, 3, stride=2), nn.BatchNorm2d(4), nn.Linear(4, 2)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        if y.sum() > 0:  # torch.fx cannot trace this: the importer falls back to the jit trace
            y = y + y * 2
        y = y.mean((2, 3))
        return torch.softmax(self.fc(y).view(y.size(0), -1), dim=1)


def test_data_dependent_model_falls_back_to_the_trace_and_keeps_buffers():
    model = Branchy()
    x = torch.randn(2, 3, 9, 9)
    mean, count = model.bn.running_mean.clone(), model.bn.num_batches_tracked.clone()
    with pytest.raises(Exception):
        hc.build_graph(model, x, method="fx")
    graph = hc.build_graph(model, x, transforms=None)  # auto: fx fails, the jit trace works
    ops = {n.id: n.op for n in graph.nodes.values()}
    assert sorted(ops.values()) == sorted(["Conv", "BatchNorm", "Relu", "Mul", "Add", "ReduceMean", "Linear",
                                           "Reshape", "Softmax"])
    add = next(k for k, op in ops.items() if op == "Add")
    assert sorted(ops[a] for a, b, _ in graph.edges if b == add) == ["Mul", "Relu"]  # the residual
    reshape = next(k for k, op in ops.items() if op == "Reshape")
    assert [ops[a] for a, b, _ in graph.edges if b == reshape] == ["Linear"]  # y.size(0) is not an edge
    conv = next(n for n in graph.nodes.values() if n.op == "Conv")
    assert conv.title == "Conv3x3/s2" and conv.output_shape == tuple(model.conv(x).shape)
    assert torch.equal(model.bn.running_mean, mean) and torch.equal(model.bn.num_batches_tracked, count)


def test_fx_and_jit_agree_on_a_residual_block():
    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(6, 6), nn.Linear(6, 6)

        def forward(self, x):
            return torch.cat([self.b(torch.relu(self.a(x))) + x, x], dim=1)

    model, x = Residual(), torch.randn(3, 6)

    def summary(graph):
        ops = {k: n.op for k, n in graph.nodes.items()}
        return (sorted((n.op, n.output_shape) for n in graph.nodes.values()),
                sorted((ops[a], ops[b]) for a, b, _ in graph.edges))

    fx, jit = (summary(hc.build_graph(model, x, transforms=None, method=m)) for m in ("fx", "jit"))
    assert fx == jit
    assert fx[0] == sorted([("Linear", (3, 6)), ("Relu", (3, 6)), ("Linear", (3, 6)), ("Add", (3, 6)),
                            ("Concat", (3, 12))])
    with pytest.raises(ValueError, match="method must be"):
        hc.build_graph(model, x, method="onnx")


def test_compare_with_torchviz_or_say_it_is_missing():
    model = small_cnn()
    page = hc.compare_html(model, X)
    views = re.findall(r'<div data-view="(\w+)"', page)
    if hc.torchviz_available():
        assert views == ["hiddenlayer", "torchviz"]
    else:
        assert views == ["hiddenlayer", "graph_svg"]
        assert "torchviz is not installed" in page
        assert page.count('data-name="AccumulateGrad"') == len(list(model.parameters()))
    assert page.count("<svg") == 2


def test_graphviz_stand_in_only_while_needed():
    real = hc.importlib.util.find_spec("graphviz") is not None
    with hc.graphviz_module():
        import graphviz

        assert (graphviz.Digraph is hc.Digraph) != real
        if not real:
            dot = graphviz.Digraph()
            dot.node("a", "<<b>bold</b>>")  # an HTML label stays unquoted, as graphviz's package does
            dot.edge("a", "b", label='say "hi"')
            assert '"a" [label=<<b>bold</b>>]' in dot.source and '"a" -> "b" [label="say \\"hi\\""]' in dot.source
            assert dot.pipe(format="svg", encoding="utf-8").startswith("<svg")
    assert real or "graphviz" not in sys.modules  # lent only inside the block


def test_make_dot_svg_is_torchvizs_drawing_and_the_same_every_time():
    pytest.importorskip("torchviz")
    w = torch.tensor([[3.0, 1.0]], requires_grad=True)
    b = torch.tensor([[3.0]], requires_grad=True)

    def draw():
        loss = ((torch.ones(4, 2) @ w.t() + b) ** 2).mean()
        return hc.make_dot_svg(loss, {"w": w, "b": b})

    svg = draw()
    assert svg.startswith("<svg") and svg == draw()
    texts = re.findall(r">([^<>]+)</text>", svg)
    for label in ("w", "b", "MmBackward0", "MeanBackward0", "AccumulateGrad"):
        assert any(label in t for t in texts), label
    assert not re.search(r"\d{9,}", svg)  # no memory addresses left
    page = hc.autograd_compare_html(((torch.ones(4, 2) @ w.t() + b) ** 2).mean(), {"w": w, "b": b})
    assert re.findall(r'data-view="(\w+)"', page) == ["torchviz", "graph_svg"]
