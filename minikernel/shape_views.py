"""Views with no chapter 01 exercise: the CPU/CUDA backend kernels of ``aten::select.int``,
``aten::slice.Tensor``, ``aten::squeeze`` (``.dim``, ``.dims``), ``aten::unsqueeze``,
``aten::diagonal``, ``aten::unbind.int``, ``aten::split.Tensor``, ``aten::split_with_sizes`` and
``aten::unfold``.

Each header is numpy's view of the input's header (``view_ops.numpy_header``: no data
is read, so any device works), after torch's checks with torch's messages
(``shape_rules.py``). The Autograd kernel records them (``autograd/shape_ops.py``) and
calls these kernels below Autograd for the values, and again for their backward
(zeros, the same view, ``copy_``): one compute path per op. ``narrow``, ``flatten``,
``unflatten`` and ``chunk`` are compositions of these and ``view``/``reshape``, as in
PyTorch (``Tensor`` methods), so a dispatch mode sees what torch's sees.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from . import shape_rules as R
from .tensor import Tensor
from .view_ops import numpy_header


def _at(dim: int, index) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` that indexes dimension ``dim`` with ``index`` (an int or a slice)."""
    return lambda a: a[(slice(None),) * dim + (index, Ellipsis)]


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """``x.select(dim, index)``: drop ``dim``, keeping position ``index`` (``x[..., index, ...]``)."""
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = R.wrap_dim(dim, x.ndim)
    size = x.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension "
                         f"{dim}")
    return numpy_header(x, _at(dim, index % size if size else index))


def slice_(x: Tensor, dim: int = 0, start: Optional[int] = None, end: Optional[int] = None,
           step: int = 1) -> Tensor:
    """``aten::slice.Tensor``: positions ``start:end:step`` of ``dim`` (clamped like Python's slices)."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return numpy_header(x, _at(R.wrap_dim(dim, x.ndim), slice(start, end, step)))


def squeeze(x: Tensor) -> Tensor:
    """Remove every size-1 dim."""
    return _squeezed(x, R.squeeze_dims(x.shape, None))


def squeeze_dim(x: Tensor, dim: int) -> Tensor:
    """Remove ``dim`` if its size is 1 (else a view of all of ``x``)."""
    return _squeezed(x, R.squeeze_dims(x.shape, dim))


def squeeze_dims(x: Tensor, dim: Sequence[int]) -> Tensor:
    """Remove the size-1 dims among ``dim``."""
    return _squeezed(x, R.squeeze_dims(x.shape, tuple(dim)))


def _squeezed(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    return numpy_header(x, lambda a: np.squeeze(a, axis=dims) if dims else a[...])


def alias(x: Tensor) -> Tensor:
    """A new header over the same memory, same shape and strides (``x[...]``, ``x[:]``)."""
    return numpy_header(x, lambda a: a)


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """A new size-1 dim at position ``dim`` (which may be ``x.ndim``)."""
    dim = R.unsqueeze_dim(dim, x.ndim)
    shape, strides = x.shape, x.stride()
    stride = 1 if dim == x.ndim else shape[dim] * strides[dim]  # torch's rule (numpy's differs at size 0 and 1)
    return x._with(shape[:dim] + (1,) + shape[dim:], strides[:dim] + (stride,) + strides[dim:])


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, moved to the last dim (``torch.diagonal``)."""
    d1, d2 = R.wrap_dim(dim1, x.ndim), R.wrap_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return numpy_header(x, lambda a: np.diagonal(a, offset, d1, d2))


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim`` (``torch.unbind``)."""
    if x.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dim = R.wrap_dim(dim, x.ndim)
    return tuple(numpy_header(x, _at(dim, i)) for i in range(x.shape[dim]))


def _pieces(x: Tensor, dim: int, sizes: Sequence[int]) -> tuple[Tensor, ...]:
    starts = np.cumsum([0, *sizes[:-1]])
    return tuple(numpy_header(x, _at(dim, slice(int(s), int(s) + n))) for s, n in zip(starts, sizes))


def split(x: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``aten::split.Tensor``: pieces of ``split_size`` along ``dim``, the last maybe smaller."""
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = R.wrap_dim(dim, x.ndim)
    return _pieces(x, dim, R.split_sizes(x.shape[dim], split_size, dim))


def split_with_sizes(x: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of the given sizes along ``dim``."""
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = R.wrap_dim(dim, x.ndim)
    return _pieces(x, dim, R.split_sizes(x.shape[dim], list(split_sizes), dim))


def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dim
    (``torch.Tensor.unfold``): windows that overlap share memory, so the result names an element
    several times."""
    dim = R.wrap_dim(dimension, x.ndim)
    length = x.shape[dim] if x.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if x.ndim == 0:
        return x._with((size,), (1,))
    stride = x.stride()[dim]
    shape = x.shape[:dim] + ((length - size) // step + 1,) + x.shape[dim + 1:] + (size,)
    strides = x.stride()[:dim] + (stride * step,) + x.stride()[dim + 1:] + (stride,)
    return x._with(shape, strides)

