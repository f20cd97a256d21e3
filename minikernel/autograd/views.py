"""Views (view/reshape, permute/transpose, expand, indexing): forward and backward side by side,
then the functional forms. A view shares memory with its input, as in PyTorch.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..aten import shape_rules as R
from ..kernels import layout
from ..tensor import Tensor, _wrap_dim
from . import derivatives as D, values as V
from .function import Function
from .pointwise import Clone
from .shape_ops import ViewScatter, _named

_np = V.array


def _reduce_to(grad: Tensor, shape: tuple) -> Tensor:
    """``grad`` summed back to an input's ``shape`` (exercise 3.2 when it was broadcast)."""
    return grad if grad.shape == tuple(shape) else D.sum_to_shape(grad, shape)


# -------------------------------------------------------------------- views
class View(Function):
    """``view``/``reshape``: a new header over the same memory when the strides allow it."""
    _torch_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, shape: tuple) -> Tensor:
        ctx.shape = x.shape
        return V.compute("view", x, shape)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return reshape(grad, ctx.shape), None


class UnsafeView(View):
    """``_unsafe_view``: the copying ``reshape``'s view of its private copy, which is no view (torch's neither)."""

    _torch_name = "UnsafeViewBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, shape: tuple) -> Tensor:
        out = View.forward(ctx, x, shape)
        out._base = None
        return out


class Permute(Function):
    _torch_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, dims: tuple) -> Tensor:
        dims = R.check_permute(dims, x.ndim)
        ctx.inverse = tuple(int(i) for i in np.argsort(dims))
        return V.compute("permute", x, dims)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return permute(grad, ctx.inverse), None


class Transpose(Permute):
    _torch_name = "TransposeBackward0"


class T(Permute):
    _torch_name = "TBackward0"


class Expand(Function):
    _torch_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, shape: tuple) -> Tensor:
        ctx.shape = x.shape
        return V.compute("expand", x, shape)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _reduce_to(grad, ctx.shape), None


class Index(Function):
    """``x[key]`` with ints and slices: a view; backward puts the gradient back in place."""
    _torch_name = "SliceBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, key) -> Tensor:
        ctx.shape, ctx.dtype, ctx.key = x.shape, x.dtype, key
        return V.compute("index", x, key)

    @staticmethod
    def backward(ctx, grad: Tensor):
        key = ctx.key  # zeros of x's shape with grad written through the same view (differentiable again)
        scatter = _named(ViewScatter, "SliceBackwardBackward0")
        return scatter.apply(grad, ctx.shape, lambda t: V.compute("index", t, key)), None


# ------------------------------------------------------- functional forms
def view(x: Tensor, shape: Sequence[int]) -> Tensor:
    return View.apply(x, R.infer_shape(shape, x.numel()))


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """A view when the strides allow one; else a copy, recorded as torch does (clone, then
    ``UnsafeViewBackward0``)."""
    shape = R.infer_shape(shape, x.numel())
    try:
        np.reshape(_np(x), shape, copy=False)
    except ValueError:
        return UnsafeView.apply(Clone.apply(x, True), shape)
    return (View if layout.is_contiguous(x.shape, x.stride()) else _ReshapeAlias).apply(x, shape)


class _ReshapeAlias(View):
    """A ``reshape`` of a non-contiguous tensor that can still be a view: torch records ``_reshape_alias``."""

    _torch_name = "ReshapeAliasBackward0"


def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    return Permute.apply(x, tuple(dims))


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    order = list(range(x.ndim))
    if x.ndim:
        d0, d1 = _wrap_dim(dim0, x.ndim), _wrap_dim(dim1, x.ndim)
        order[d0], order[d1] = order[d1], order[d0]
    return Transpose.apply(x, tuple(order))


def t(x: Tensor) -> Tensor:
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return T.apply(x, tuple(reversed(range(x.ndim))))


def expand(x: Tensor, shape: Sequence[int]) -> Tensor:
    return Expand.apply(x, tuple(shape))


class _IndexSelect(Index):
    _torch_name = "SelectBackward0"


class _IndexAlias(Index):
    _torch_name = "AliasBackward0"


def index(x: Tensor, key) -> Tensor:
    """``x[key]`` with ints and slices (the ``index`` operator makes torch's range checks).

    The node is named after the last view torch takes for ``key`` left to right: a
    ``select`` for an int, a ``slice`` for a slice that leaves something out (a slice of
    everything is skipped), an ``alias`` when nothing was left out at all. A slice alone (not
    in a tuple) is always a ``slice``, as torch's fast path for it takes one."""
    if isinstance(key, slice):
        return Index.apply(x, (key,))
    key = key if isinstance(key, tuple) else (key,)
    last = _IndexAlias
    for k, size in zip(key, x.shape):
        if not isinstance(k, slice):
            last = _IndexSelect
        elif not (k.start in (None, 0) and (k.stop is None or k.stop >= size) and k.step in (None, 1)):
            last = Index
    return last.apply(x, key)
