"""hiddenlayer's graph importer, rebuilt on torch.fx (public API) with a jit-trace fallback.

hiddenlayer 0.3 traced a model and lowered the trace to ONNX to read its layers;
that lowering (``torch.onnx._optimize_trace``) is gone from torch 2.x. Here:

* ``torch.fx.symbolic_trace`` + ``ShapeProp``: one node per module call, function
  or tensor method, with the output shape ShapeProp measured;
* when fx cannot trace the model (data-dependent control flow), the trace graph
  of ``torch.jit._get_trace_graph`` (what hiddenlayer itself used; a private API),
  keeping the ``aten::`` nodes the input flows through.

Nodes get hiddenlayer's (ONNX) op names: Conv, Relu, MaxPool, Linear, Flatten,
BatchNorm, Add, Concat ... so its transforms (``Conv > Relu`` -> ``ConvRelu``)
and themes apply unchanged. ``hiddenlayer_compat.install()`` plugs it in.
"""
from __future__ import annotations

import contextlib
import re
import warnings
from typing import Any, Iterator, Optional

import torch
from torch import nn

#: module class name pattern -> hiddenlayer op
MODULE_OPS = [(r"Conv[123]d", "Conv"), (r"ConvTranspose[123]d", "ConvTranspose"), (r"(Lazy)?Linear", "Linear"),
              (r"ReLU6?", "Relu"), (r"LeakyReLU", "LeakyRelu"), (r"GELU", "Gelu"), (r"ELU", "Elu"),
              (r"SiLU", "Silu"), (r"Sigmoid", "Sigmoid"), (r"Tanh", "Tanh"), (r"Softmax", "Softmax"),
              (r"LogSoftmax", "LogSoftmax"), (r"MaxPool[123]d", "MaxPool"), (r"AvgPool[123]d", "AveragePool"),
              (r"AdaptiveAvgPool[123]d", "AdaptiveAvgPool"), (r"BatchNorm[123]d", "BatchNorm"),
              (r"LayerNorm", "LayerNorm"), (r"Dropout[123]?d?", "Dropout"), (r"Flatten", "Flatten"),
              (r"Embedding", "Embedding")]
#: function, tensor method or aten op name (trailing "_" dropped) -> hiddenlayer op
FUNCTION_OPS = {
    "relu": "Relu", "relu6": "Relu", "leaky_relu": "LeakyRelu", "gelu": "Gelu", "elu": "Elu", "silu": "Silu",
    "sigmoid": "Sigmoid", "tanh": "Tanh", "softmax": "Softmax", "log_softmax": "LogSoftmax",
    "add": "Add", "iadd": "Add", "sub": "Sub", "mul": "Mul", "truediv": "Div", "div": "Div",
    "matmul": "MatMul", "mm": "MatMul", "bmm": "MatMul", "linear": "Linear", "addmm": "Linear",
    "conv1d": "Conv", "conv2d": "Conv", "conv3d": "Conv", "_convolution": "Conv", "convolution": "Conv",
    "max_pool1d": "MaxPool", "max_pool2d": "MaxPool", "max_pool3d": "MaxPool",
    "max_pool2d_with_indices": "MaxPool", "avg_pool2d": "AveragePool",
    "adaptive_avg_pool2d": "AdaptiveAvgPool", "batch_norm": "BatchNorm", "layer_norm": "LayerNorm",
    "dropout": "Dropout", "feature_dropout": "Dropout", "flatten": "Flatten", "view": "Reshape",
    "reshape": "Reshape", "permute": "Transpose", "transpose": "Transpose", "t": "Transpose",
    "cat": "Concat", "concat": "Concat", "mean": "ReduceMean", "sum": "ReduceSum", "pad": "Pad",
    "getitem": "Slice", "embedding": "Embedding",
}
#: ops that only pass their input on: left out, their input wired to their users
PASS_THROUGH = {"contiguous", "clone", "detach", "Identity", "identity", "to", "type_as", "alias"}


def _camel(name: str) -> str:
    """"adaptive_max_pool2d" -> "AdaptiveMaxPool2d": the fallback for ops without an ONNX name."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or name


def module_op(module: nn.Module) -> str:
    name = type(module).__name__
    return next((op for pattern, op in MODULE_OPS if re.fullmatch(pattern, name)), name)


def function_op(name: str) -> str:
    name = name.rstrip("_") if name.rstrip("_") else name
    return FUNCTION_OPS.get(name, _camel(name))


def _size_list(value: Any, ndim: int) -> list[int]:
    return list(value) if isinstance(value, (tuple, list)) else [int(value)] * ndim


def module_params(module: nn.Module, out_shape: Optional[tuple]) -> dict:
    """hiddenlayer's ``kernel_shape``/``stride`` params (its titles print "Conv3x3/s2") from a layer."""
    ndim = max(len(out_shape or ()) - 2, 1)
    if not hasattr(module, "kernel_size"):
        return {}
    kernel = _size_list(module.kernel_size, ndim)
    stride = getattr(module, "stride", None)
    return {"kernel_shape": kernel, "stride": _size_list(stride if stride is not None else kernel, ndim)}


@contextlib.contextmanager
def _buffers_kept(model: nn.Module) -> Iterator[None]:
    """Tracing runs the model: put its buffers (BatchNorm's running stats) back afterwards."""
    kept = {name: b.detach().clone() for name, b in model.named_buffers()}
    try:
        with torch.no_grad():
            yield
    finally:
        with torch.no_grad():
            for name, b in model.named_buffers():
                if name in kept:
                    b.copy_(kept[name])


def _fx_nodes(model: nn.Module, args: tuple) -> list[tuple[str, str, Optional[tuple], dict, list[str]]]:
    """(uid, op, output shape, params, input uids) per traced call, via torch.fx + ShapeProp."""
    from torch.fx import symbolic_trace
    from torch.fx.passes.shape_prop import ShapeProp

    gm = symbolic_trace(model)
    ShapeProp(gm).propagate(*args)
    modules = dict(gm.named_modules())
    kept: dict[str, tuple] = {}
    sources: dict[str, list[str]] = {}  # fx name -> the kept nodes its value comes from
    for node in gm.graph.nodes:
        inputs = [u for n in node.all_input_nodes for u in sources.get(n.name, [])]
        meta = node.meta.get("tensor_meta")
        op = None
        if node.op == "call_module":
            module = modules[node.target]
            op = module_op(module)
        elif node.op == "call_function":
            op = function_op(getattr(node.target, "__name__", str(node.target)))
        elif node.op == "call_method":
            op = function_op(node.target)
        if meta is None and node.op != "placeholder":
            sources[node.name] = []  # an int or a size (x.size(0)): shape bookkeeping, not data
            continue
        if op is None or not hasattr(meta, "shape") or op in PASS_THROUGH or node.target in PASS_THROUGH:
            sources[node.name] = list(dict.fromkeys(inputs))  # not drawn: its users see its sources
            continue
        shape = tuple(meta.shape)
        params = module_params(modules[node.target], shape) if node.op == "call_module" else {}
        kept[node.name] = (node.name, op, shape, params, list(dict.fromkeys(inputs)))
        sources[node.name] = [node.name]
    return list(kept.values())


def _const(value: Any) -> Any:
    """A traced constant (or a list of them) as a Python value; None if it is not one."""
    node = value.node()
    if node.kind() == "prim::ListConstruct":
        items = [_const(v) for v in node.inputs()]
        return None if any(i is None for i in items) else items
    try:
        return value.toIValue()
    except Exception:  # noqa: BLE001 - not a constant
        return None


def _jit_nodes(model: nn.Module, args: tuple) -> list[tuple[str, str, Optional[tuple], dict, list[str]]]:
    """The same list from the trace graph: the ``aten::`` nodes the inputs flow through."""
    with warnings.catch_warnings():  # the fallback is for data-dependent models: torch says so once per branch
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        graph, _ = torch.jit._get_trace_graph(model, args)
    n_data = len(args)
    sources: dict[str, list[str]] = {v.debugName(): [] for v in list(graph.inputs())[:n_data]}
    kept = []
    for node in graph.nodes():
        ins = list(node.inputs())
        if not any(v.debugName() in sources for v in ins):
            continue  # parameters and constants only: not on the data path
        inputs = list(dict.fromkeys(u for v in ins for u in sources.get(v.debugName(), [])))
        kind, outs = node.kind(), list(node.outputs())
        name = kind.split("::", 1)[1]
        sizes = outs[0].type().sizes() if outs and isinstance(outs[0].type(), torch._C.TensorType) else None
        if kind.startswith("aten::") and sizes is None:
            for v in outs:
                sources[v.debugName()] = []  # aten::size and friends: shape bookkeeping, not data
            continue
        if not kind.startswith("aten::") or name.rstrip("_") in PASS_THROUGH:
            for v in outs:
                sources[v.debugName()] = inputs
            continue
        op, uid = function_op(name), "/outputs/" + "/".join(v.debugName() for v in outs)
        params = {}
        if op in ("Conv", "MaxPool"):
            kernel = ins[1].type().sizes()[2:] if op == "Conv" else _const(ins[1])
            stride = _const(ins[3] if op == "Conv" else ins[2]) or kernel
            if kernel:
                params = {"kernel_shape": _size_list(kernel, len(sizes) - 2),
                          "stride": _size_list(stride, len(sizes) - 2)}
        kept.append((uid, op, tuple(sizes), params, inputs))
        for v in outs:
            sources[v.debugName()] = [uid]
    return kept


def import_graph(hl_graph, model: nn.Module, args, input_names=None, verbose: bool = False, method: str = "auto"):
    """Fill a ``hiddenlayer.Graph`` with ``model``'s layers (hiddenlayer's ``import_graph`` signature).

    Args:
        hl_graph (hiddenlayer.Graph): the graph to add nodes and edges to.
        model (nn.Module): the network; it runs once on ``args`` (buffers are restored).
        args (Tensor or tuple of Tensors): example inputs.
        input_names: unused, as in hiddenlayer 0.3.
        verbose (bool, optional): print each node found. Default: ``False``
        method (str, optional): ``"fx"``, ``"jit"`` or ``"auto"`` (fx, falling back to jit when
            fx cannot trace the model). Default: ``"auto"``

    Returns:
        hiddenlayer.Graph: ``hl_graph``; node ``op`` is hiddenlayer's name ("Conv", "Relu", ...),
        ``output_shape`` the traced shape, edges are labelled with the source's shape.
    """
    from hiddenlayer.graph import Node

    if method not in ("auto", "fx", "jit"):
        raise ValueError(f"method must be 'auto', 'fx' or 'jit', got {method!r}")
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    with _buffers_kept(model):
        if method == "jit":
            nodes = _jit_nodes(model, args)
        else:
            try:
                nodes = _fx_nodes(model, args)
            except Exception:  # noqa: BLE001 - fx refuses data-dependent control flow
                if method == "fx":
                    raise
                nodes = _jit_nodes(model, args)
    shapes = {uid: shape for uid, _, shape, _, _ in nodes}
    for uid, op, shape, params, inputs in nodes:
        if verbose:
            print(f"{op:12} {str(shape):24} <- {inputs}")
        hl_graph.add_node(Node(uid=uid, name=None, op=op, output_shape=shape, params=params))
        for src in inputs:
            hl_graph.add_edge_by_id(src, uid, shapes[src])
    return hl_graph
