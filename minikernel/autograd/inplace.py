"""In-place operations on the autograd path: ``x.mul_(2)``, ``x += y`` when autograd is involved.

The new values are computed out of place and written into ``x``'s memory with
``aten::copy_`` (whose ADInplaceOrView kernel bumps ``x``'s version counter); while recording, ``x`` takes the new node as its
``grad_fn`` (PyTorch "rebases" its history), so anything that saved the old ``x``
for backward finds its version changed and refuses to run. An op that saves its
result (``exp_``, ``relu_``, ``sigmoid_``, ``tanh_``) saves ``x`` itself, at its new
version, as torch does.

When ``x`` is a view, the values written are its base's too: the base's history is
rewritten with a ``CopySlices`` node (``view_nodes.py``), and ``x`` (like every view
of that base) then reaches the graph through the base.
"""
from __future__ import annotations

from typing import Optional, Union

from ..aten.binary_ops import UFUNCS
from ..aten.memory_overlap import in_kernel_order, reads_what_it_writes
from ..aten.tensor_iterator import check_out
from ..tensor import Tensor
from . import values as V
from .function import Function
from .grad_mode import is_grad_enabled
from .graph import Node
from .pointwise import add, div, exp, log, mul, neg, pow, relu, sigmoid, sub, tanh
from .reductions import sum as rsum
from .view_nodes import CopySlices

Operand = Union[Tensor, int, float]

class CopyFrom(Function):
    """``x.copy_(src)``: ``src`` broadcast to ``x``'s shape, cast to its dtype. The old values of
    ``x`` don't reach the result (gradient 0); ``src`` gets the gradient summed to its shape."""

    _torch_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, x: Tensor, src: Tensor) -> Tensor:
        ctx.src_shape, ctx.src_dtype = src.shape, src.dtype
        V.broadcast_shape(x.shape, src.shape)
        if len(src.shape) > len(x.shape) or any(s not in (1, n) for s, n in zip(src.shape[::-1], x.shape[::-1])):
            raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape "
                               f"{list(V.broadcast_shape(x.shape, src.shape))}")
        out = V.zeros(x.shape, dtype=x.dtype)
        V.compute("copy_", out, src)  # broadcast, cast to x's dtype
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        to_src, lead = grad, grad.ndim - len(ctx.src_shape)
        if lead:
            to_src = rsum(to_src, tuple(range(lead)))
        dims = tuple(d for d, n in enumerate(ctx.src_shape) if n == 1 and to_src.shape[d] != 1)
        if dims:
            to_src = rsum(to_src, dims, keepdim=True)
        return V.zeros_like(grad), to_src


class Fill(Function):
    """``x.fill_(value)`` / ``x.zero_()``: every element becomes ``value``; gradient 0 for ``x``."""

    _torch_name = "FillBackward2"  # fill_.Scalar: torch numbers the overloads of fill

    @staticmethod
    def forward(ctx, x: Tensor, value) -> Tensor:
        return V.full(x.shape, value, x.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return V.zeros_like(grad), None


class Zero(Fill):
    _torch_name = "ZeroBackward0"


def _copy(x: Tensor, src: Tensor) -> Tensor:
    return CopyFrom.apply(x, src)


def _fill(x: Tensor, value) -> Tensor:
    return Fill.apply(x, value)


def _zero(x: Tensor, _unused=None) -> Tensor:
    return Zero.apply(x, 0)


_INPLACE = {"add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "exp": exp, "log": log,
            "relu": relu, "sigmoid": sigmoid, "tanh": tanh, "pow": pow, "copy": _copy, "fill": _fill,
            "zero": _zero}


def inplace(name: str, x: Tensor, other: Optional[Operand] = None) -> Tensor:
    """``x.<name>_(other)``: compute out of place, write the values into ``x``, bump its version."""
    args = (x,) if other is None else (x, other)
    recording = is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args)
    if recording:
        x._check_inplace()
    source = _original(x) if recording else x
    result = _INPLACE[name](*((source,) if other is None else (source, other)))
    operands = [a for a in args[1:] if isinstance(a, Tensor)]
    if name not in ("fill", "zero"):  # torch's fill_ and zero_ check no overlap: they may write into an expanded tensor
        check_out(f"{name}_", x, result.shape, result.dtype, "cpu", operands, inplace=True)  # torch's refusals
    values = result  # the graph stays result's; the values written may come in torch's element order
    if name in UFUNCS and not x.is_cuda and reads_what_it_writes(x, operands):
        values = V.wrap(in_kernel_order(UFUNCS[name], x, other), x.dtype)
    V.write(x, values)  # aten::copy_: the backend writes, ADInplaceOrView bumps x's version once
    if recording and result.grad_fn is not None:
        rebase_history(x, result, result.grad_fn)
    return x


def _original(x: Tensor) -> Tensor:
    """``x``'s values before the op, in memory of their own, with ``x``'s history: what the op's
    backward may save (torch saves ``original_self`` too), so that writing into ``x`` next
    doesn't invalidate it."""
    copy = V.compute("clone", x)
    copy._requires_grad, copy.grad_fn, copy._output_nr = x._requires_grad, x.grad_fn, x._output_nr
    copy._accumulator = x._grad_accumulator() if x.requires_grad and x.grad_fn is None else None
    return copy


def _move_retained_grad(x: Tensor, node: Node, output_nr: int) -> None:
    """``retain_grad()`` follows ``x`` to its new node (output ``output_nr``), as in torch: the
    gradient kept is the one of ``x``'s latest version, written in place directly or through a view."""
    if x._retains_grad and x._grad_fn is not None:
        ref = x._grad_fn._retains_grad.pop(x._output_nr, None)
        if ref is not None:
            node._retains_grad[output_nr] = ref


def rebase_history(x: Tensor, result: Tensor, node: Node) -> None:
    """Make ``node`` (computed out of place as ``result``) the history of ``x``, now holding its values."""
    saves_result = hasattr(node, "_to_save") and any(t is result for t in node._to_save)
    if x._base is None:
        _move_retained_grad(x, node, result._output_nr)
        x._set_history(node, result._output_nr)
    else:
        base = x._base
        copy_slices = CopySlices(base, x, node)
        _move_retained_grad(base, copy_slices, 0)
        base._set_history(copy_slices, 0)
        # x's own grad_fn is regenerated from the base when next read (its version moved on).
    if saves_result:
        node._to_save = tuple(x if t is result else t for t in node._to_save)
        node._freeze_saved()  # the result saved is x itself, at its new version, as node's output
