"""The Autograd kernels of the views with no chapter 01 exercise: select, slice, squeeze
(three overloads), unsqueeze, diagonal, unbind, split and split_with_sizes.

Each view is computed by its backend kernel (``minikernel/aten/shape.py``), called
below Autograd (``V.compute``), so one pair of Functions serves them all: ``ViewOf``
(forward: the view; backward: ``ViewScatter``) and ``ViewScatter`` (zeros of the
input's shape, the same view of them, the gradient ``copy_``-ed into it — torch's
``select_backward`` and kin — differentiable again: its own backward is the view).
The node names are torch's (``SelectBackward0``, ...). ``unbind``/``split`` return
several views from one node, which torch forbids modifying in place (see
``Tensor._check_inplace``). ``indexing.py`` uses the same pair for ``x[..., None]``.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..kernels.layout import has_internal_overlap
from ..tensor import Tensor
from . import values as V
from .function import Function

ViewFn = Callable[[Tensor], Tensor]  #: the view, computed below Autograd
MultiFn = Callable[[Tensor], tuple]
_NAMED: dict[tuple[type, str], type] = {}


class ViewOf(Function):
    """``view(x)``, a view of ``x``."""

    @staticmethod
    def forward(ctx, x: Tensor, view: ViewFn) -> Tensor:
        ctx.shape, ctx.view = x.shape, view
        return view(x)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return ViewScatter.apply(grad, ctx.shape, ctx.view), None


class ViewScatter(Function):
    """Zeros of ``shape`` with ``grad`` written where ``view`` looks."""

    @staticmethod
    def forward(ctx, grad: Tensor, shape: tuple, view: ViewFn) -> Tensor:
        ctx.view = view
        out = V.zeros(shape, dtype=grad.dtype)
        window = view(out)
        if has_internal_overlap(window.shape, window.stride()):  # unfold's windows overlap: add every share
            positions = window.storage_offset() + sum(
                np.indices(window.shape, dtype=np.int64)[d] * st for d, st in enumerate(window.stride()))
            np.add.at(V.array(out).reshape(-1), np.asarray(positions).reshape(-1), V.array(grad).reshape(-1))
        else:
            V.compute("copy_", window, grad)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        return ViewOf.apply(grad, ctx.view), None, None


class MultiView(Function):
    """Several views of ``x`` from one node (``unbind``, ``split``)."""

    @staticmethod
    def forward(ctx, x: Tensor, views: MultiFn) -> tuple:
        ctx.shape, ctx.dtype, ctx.views = x.shape, x.dtype, views
        return views(x)

    @staticmethod
    def backward(ctx, *grads: Tensor):
        out = V.zeros(ctx.shape, dtype=ctx.dtype)
        for piece, g in zip(ctx.views(out), grads):
            if g is not None:
                V.compute("copy_", piece, g)
        return out, None


def _named(base: type, torch_name: str) -> type:
    """``base`` under torch's node name (one subclass per name, made once)."""
    key = (base, torch_name)
    if key not in _NAMED:
        _NAMED[key] = type(torch_name.removesuffix("0").removesuffix("Backward"), (base,),
                           {"_torch_name": torch_name, "__module__": __name__})
    return _NAMED[key]


def view_node(x: Tensor, torch_name: str, view: ViewFn) -> Tensor:
    """``view(x)`` recorded as a node named ``torch_name``."""
    return _named(ViewOf, torch_name).apply(x, view)


def _op(name: str, torch_name: str, x: Tensor, *args) -> Tensor:
    return view_node(x, torch_name, lambda t: V.compute(name, t, *args))


def _multi(name: str, torch_name: str, short: str, x: Tensor, *args) -> tuple:
    outs = _named(MultiView, torch_name).apply(x, lambda t: V.compute(name, t, *args))
    for out in outs:
        out._multi_output_view = short
    return outs


# ---------------------------------------------------------------- the ops
def select(x: Tensor, dim: int, index: int) -> Tensor:
    """``x.select(dim, index)``: drop ``dim``, keeping position ``index``."""
    return _op("select.int", "SelectBackward0", x, dim, index)


def slice_(x: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """``aten::slice.Tensor`` (``narrow`` too): positions ``start:end:step`` of ``dim``."""
    return _op("slice.Tensor", "SliceBackward0", x, dim, start, end, step)


def squeeze(x: Tensor) -> Tensor:
    return _op("squeeze", "SqueezeBackward0", x)


def squeeze_dim(x: Tensor, dim: int) -> Tensor:
    return _op("squeeze.dim", "SqueezeBackward1", x, dim)


def squeeze_dims(x: Tensor, dim: Sequence[int]) -> Tensor:
    return _op("squeeze.dims", "SqueezeBackward2", x, tuple(dim))


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    return _op("unsqueeze", "UnsqueezeBackward0", x, dim)


def alias(x: Tensor) -> Tensor:
    return _op("alias", "AliasBackward0", x)


def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    return _op("unfold", "UnfoldBackward0", x, dimension, size, step)


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return _op("diagonal", "DiagonalBackward0", x, offset, dim1, dim2)


def unbind(x: Tensor, dim: int = 0) -> tuple:
    return _multi("unbind.int", "UnbindBackward0", "Unbind", x, dim)


def split(x: Tensor, split_size: int, dim: int = 0) -> tuple:
    return _multi("split.Tensor", "SplitBackward0", "Split", x, split_size, dim)


def split_with_sizes(x: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple:
    return _multi("split_with_sizes", "SplitWithSizesBackward0", "SplitWithSizes", x, tuple(split_sizes), dim)
