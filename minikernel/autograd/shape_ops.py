"""More views: select, narrow, squeeze/unsqueeze, flatten/unflatten, diagonal, unbind/split/chunk.

Each is a numpy view of the input (``fn(array)``), so one pair of Functions serves
them all: ``ViewOf`` (forward: the view; backward: the gradient written into zeros
of the input's shape through the same ``fn``) and ``ViewScatter`` (that backward,
differentiable again: its own backward is the view). The node names are torch's
(``SelectBackward0``, ...). ``unbind``/``split``/``chunk`` return several views from
one node, which torch forbids modifying in place (see ``Tensor._check_inplace``).
The shape checks and their messages are ``shape_rules.py``'s.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .. import shape_rules as R
from ..tensor import Tensor
from . import values as V
from .function import Function

ViewFn = Callable[[np.ndarray], np.ndarray]
_np = V.array
_NAMED: dict[tuple[type, str], type] = {}


class ViewOf(Function):
    """``fn(x)`` as a view of ``x``."""

    @staticmethod
    def forward(ctx, x: Tensor, fn: ViewFn) -> Tensor:
        ctx.shape, ctx.fn = x.shape, fn
        return V.view_of(x, fn(_np(x)))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return ViewScatter.apply(grad, ctx.shape, ctx.fn), None


class ViewScatter(Function):
    """Zeros of ``shape`` with ``grad`` written where ``fn`` looks."""

    @staticmethod
    def forward(ctx, grad: Tensor, shape: tuple, fn: ViewFn) -> Tensor:
        ctx.fn = fn
        out = np.zeros(shape, grad.dtype)
        fn(out)[...] = _np(grad)
        return V.wrap(out)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return ViewOf.apply(grad, ctx.fn), None, None


class MultiView(Function):
    """Several views of ``x`` from one node (``unbind``, ``split``)."""

    @staticmethod
    def forward(ctx, x: Tensor, fns: tuple) -> tuple:
        ctx.shape, ctx.dtype, ctx.fns = x.shape, x.dtype, fns
        return tuple(V.view_of(x, fn(_np(x))) for fn in fns)

    @staticmethod
    def backward(ctx, *grads: Tensor):
        out = np.zeros(ctx.shape, ctx.dtype)
        for fn, g in zip(ctx.fns, grads):
            if g is not None:
                fn(out)[...] = _np(g)
        return V.wrap(out), None


def _named(base: type, torch_name: str) -> type:
    """``base`` under torch's node name (one subclass per name, made once)."""
    key = (base, torch_name)
    if key not in _NAMED:
        _NAMED[key] = type(torch_name.removesuffix("0").removesuffix("Backward"), (base,),
                           {"_torch_name": torch_name, "__module__": __name__})
    return _NAMED[key]


def _view(x: Tensor, torch_name: str, fn: ViewFn) -> Tensor:
    return _named(ViewOf, torch_name).apply(x, fn)


def _multi(x: Tensor, torch_name: str, short: str, fns: list) -> tuple:
    outs = _named(MultiView, torch_name).apply(x, tuple(fns))
    for out in outs:
        out._multi_output_view = short
    return outs


def _at(dim: int, index) -> Callable:
    """``fn`` that indexes dimension ``dim`` with ``index`` (an int or a slice)."""
    return lambda a: a[(slice(None),) * dim + (index, Ellipsis)]


# ---------------------------------------------------------------- the ops
def select(x: Tensor, dim: int, index: int) -> Tensor:
    """``x.select(dim, index)``: drop ``dim``, keeping position ``index`` (``x[..., index, ...]``)."""
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = R.wrap_dim(dim, x.ndim)
    size = x.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension "
                         f"{dim}")
    return _view(x, "SelectBackward0", _at(dim, index % size if size else index))


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``x.narrow(dim, start, length)``: positions ``start .. start+length-1`` of ``dim``."""
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = R.wrap_dim(dim, x.ndim)
    start = R.narrow_range(x.shape[dim], start, length, dim)
    return _view(x, "SliceBackward0", _at(dim, slice(start, start + length)))


def squeeze(x: Tensor, dim=None) -> Tensor:
    """Remove size-1 dims (all of them, or those among ``dim``); other dims are left alone."""
    dims = R.squeeze_dims(x.shape, dim)
    name = "SqueezeBackward0" if dim is None else ("SqueezeBackward2" if isinstance(dim, (tuple, list))
                                                   else "SqueezeBackward1")
    return _view(x, name, lambda a: np.squeeze(a, axis=dims) if dims else a[...])


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """A new size-1 dim at position ``dim`` (which may be ``x.ndim``)."""
    dim = R.unsqueeze_dim(dim, x.ndim)
    return _view(x, "UnsqueezeBackward0", lambda a: np.expand_dims(a, dim))


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when the strides allow, else a copy)."""
    if x.ndim == 0:
        return x.reshape(1)
    start, end = R.wrap_dim(start_dim, x.ndim), R.wrap_dim(end_dim, x.ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return x
    shape = (*x.shape[:start], math.prod(x.shape[start:end + 1]), *x.shape[end + 1:])
    return x.reshape(shape)


def unflatten(x: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one of them may be -1)."""
    dim = R.wrap_dim(dim, x.ndim)
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    inner = R.infer_shape(sizes, x.shape[dim]) if -1 in sizes or math.prod(sizes) == x.shape[dim] else None
    if inner is None:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({x.shape[dim]}) in the input tensor")
    return x.view((*x.shape[:dim], *inner, *x.shape[dim + 1:]))


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, moved to the last dim (``torch.diagonal``)."""
    d1, d2 = R.wrap_dim(dim1, x.ndim), R.wrap_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _view(x, "DiagonalBackward0", lambda a: _writable(np.diagonal(a, offset, d1, d2)))


def _writable(view: np.ndarray) -> np.ndarray:
    """numpy hands out diagonals read-only; backward writes through them into a fresh array."""
    if view.base is not None and view.base.flags.writeable:
        view.setflags(write=True)
    return view


def unbind(x: Tensor, dim: int = 0) -> tuple:
    """The slices along ``dim``, as views from one node (``torch.unbind``)."""
    if x.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dim = R.wrap_dim(dim, x.ndim)
    return _multi(x, "UnbindBackward0", "Unbind", [_at(dim, i) for i in range(x.shape[dim])])


def split(x: Tensor, split_size, dim: int = 0) -> tuple:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = R.wrap_dim(dim, x.ndim)
    sizes = R.split_sizes(x.shape[dim], split_size, dim)
    starts = np.cumsum([0, *sizes[:-1]])
    fns = [_at(dim, slice(int(s), int(s) + n)) for s, n in zip(starts, sizes)]
    if isinstance(split_size, (tuple, list)):
        return _multi(x, "SplitWithSizesBackward0", "SplitWithSizes", fns)
    return _multi(x, "SplitBackward0", "Split", fns)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunks`` pieces (or fewer) of equal size along ``dim``, the last maybe smaller."""
    if x.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    dim = R.wrap_dim(dim, x.ndim)
    size = x.shape[dim]
    return split(x, max(1, -(-size // chunks)) if size else 0, dim) if size else split(x, 0, dim)
