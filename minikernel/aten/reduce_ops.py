"""Reductions (ATen's ``ReduceOps.cpp``): ``sum``, ``amax``, ``max``, ``mean`` and ``prod``.

The chapter 02 kernel path: ``sum``, ``amax``, ``max`` (its values) and ``mean`` fold
dimensions with your reduce kernel (exercises 2.4, 2.8), after ``tensor_iterator.py``'s
checks. The numpy reference path: ``prod``, and ``max``'s indices, have no chapter 02
kernel and compute with numpy (``kernels/reference.py``, CPU only).
"""
from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Optional, Sequence, Union

import numpy as np

from ..kernels import launch, layout, reference
from ..kernels.scalar_ops import MAX, REDUCE, SUM
from ..tensor import _SCALAR_NAMES, Tensor, _wrap_dim, int64
from .binary_ops import binary
from .tensor_iterator import _check_dtype, _check_operand, _reshaped, device_of, empty
from .unary_ops import contiguous


# ------------------------------------------------ chapter 02's reduce kernel
def _identity(op: int, dtype: np.dtype):
    if op == SUM or dtype.kind == "b":
        return dtype.type(0)
    return dtype.type(-np.inf) if dtype.kind == "f" else dtype.type(np.iinfo(dtype).min)


def _flat(a: Tensor) -> Tensor:
    """All of ``a``'s elements as one 1-D tensor: a strided view when the layout allows, else a copy."""
    shape, (strides,) = layout.iteration_layout(a.shape, a.stride())
    if len(shape) == 1:
        return a._with((a.numel(),), strides, a.storage_offset())
    copy = contiguous(a)
    return copy._with((a.numel(),), (1,), copy.storage_offset())


def _reduce(name: str, a: Tensor, dim: Union[None, int, Sequence[int]], keepdim: bool) -> Tensor:
    """Fold one dimension, several (one after another), or all (``dim=None``) with the reduce kernel."""
    _check_operand(a, name)
    if not isinstance(a, Tensor):
        raise TypeError(f"{name}() expects a minikernel Tensor, got {type(a).__name__}")
    if isinstance(dim, (tuple, list)):
        wrapped = [_wrap_dim(int(d), builtins.max(a.ndim, 1)) for d in dim]
        for d in wrapped:
            if wrapped.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims = sorted(wrapped, reverse=True)
        if not dims:
            return _reduce(name, a, None, keepdim)
        for d in dims:  # the last first, so the other dims keep their numbers
            a = _reduce(name, a, d, True)
        if keepdim or not a.ndim:
            return a
        shape = tuple(n for i, n in enumerate(a.shape) if i not in dims)
        return _reshaped(a, shape, layout.contiguous_strides(shape), a.storage_offset())
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))):
        raise TypeError(f"{name}(): minikernel reduces one dimension at a time: pass dim as an int, or "
                        f"nothing to reduce all elements; got {dim!r}")
    where = device_of(name, a)
    _check_dtype(name, where, a.dtype)
    op = REDUCE["max" if name in ("amax", "max") else "sum"]
    dtype = int64 if op == SUM and a.dtype.kind in "biu" else a.dtype  # torch sums integers and bools as int64
    launch.check_runnable(where, "reduce")
    if dim is None:
        if op == MAX and a.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        flat = _flat(a) if a.numel() else a._with((0,), (1,), 0)
        out = empty((1,), (1,), dtype, where)
        launch.reduce_(op, _identity(op, dtype), out, flat, 0)
        shape = (1,) * a.ndim if keepdim else ()
        return _reshaped(out, shape, (1,) * len(shape), 0)
    d = _wrap_dim(int(dim), a.ndim)
    if op == MAX and a.ndim and a.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    kept = tuple(1 if i == d else n for i, n in enumerate(a.shape))
    out = empty(kept, layout.contiguous_strides(kept), dtype, where)
    launch.reduce_(op, _identity(op, dtype), out, a, d)
    if keepdim or a.ndim == 0:
        return out
    shape = kept[:d] + kept[d + 1:]
    return _reshaped(out, shape, layout.contiguous_strides(shape), 0)


def sum(a: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:  # noqa: A001 - torch's name
    """Sum of all elements, or along ``dim``. Matches ``torch.sum(a)`` / ``torch.sum(a, dim, keepdim)``."""
    return _reduce("sum", a, dim, keepdim)


def amax(a: Tensor, dim: Union[int, tuple] = (), keepdim: bool = False) -> Tensor:
    """Largest element (NaN if any), overall or along ``dim``. Matches ``torch.amax(a, dim, keepdim)``."""
    return _reduce("amax", a, None if dim in ((), None) else dim, keepdim)


#: ``torch.return_types.max``: what ``max(dim)`` returns.
MaxResult = namedtuple("max", ["values", "indices"])


def max(a: Tensor, dim: Optional[int] = None, keepdim: bool = False):  # noqa: A001 - torch's name
    """Largest element of ``a`` (``torch.max(a)``), or along ``dim`` the values and the
    index of each row's first maximum (``torch.max(a, dim, keepdim)``).

    The values come from the reduce kernel; the indices from the numpy reference
    backend (no chapter 02 kernel computes them).
    """
    if dim is None:
        return _reduce("max", a, None, keepdim)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"max(): dim must be an int, got {dim!r}")
    values = _reduce("max", a, int(dim), keepdim)
    d = _wrap_dim(int(dim), builtins.max(a.ndim, 1))
    where = device_of("max", a)
    indices = empty(values.shape, layout.contiguous_strides(values.shape), int64, where)
    if a.ndim:
        reference.apply(lambda x: np.argmax(x, axis=d, keepdims=True).reshape(values.shape), indices, a)
    else:
        reference.apply(lambda x: np.zeros((), np.int64), indices, a)
    return MaxResult(values, indices)


def mean(a: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Average: the reduce kernel's sum divided by the count (zip kernel). Matches ``torch.mean``."""
    _check_operand(a, "mean")
    if a.dtype.kind != "f":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating "
                           f"point or complex dtype. Got: {_SCALAR_NAMES.get(a.dtype, a.dtype)}")
    total = sum(a, dim, keepdim)
    dims = () if dim is None else (dim if isinstance(dim, (tuple, list)) else (dim,))
    count = a.numel() if not dims else (math.prod(a.shape[d] for d in {_wrap_dim(int(d), a.ndim) for d in dims})
                                           if a.ndim else 1)
    return binary("div", total, float(count), out=total, inplace=True)


# ------------------------------------------------ the numpy reference backend
def prod(a: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Product of all elements, or along ``dim``. Matches ``torch.prod`` (integers as int64)."""
    _check_operand(a, "prod")
    where = device_of("prod", a)
    dtype = a.dtype if a.dtype.kind == "f" else int64
    if dim is None:
        out = empty((), (), dtype, where)
        reference.apply(lambda x: np.prod(x, dtype=dtype), out, a)
        return out
    d = _wrap_dim(int(dim), builtins.max(a.ndim, 1))
    shape = a.shape if not a.ndim else tuple(n for i, n in enumerate(a.shape) if i != d or keepdim)
    shape = tuple(1 if (i == d and keepdim) else n for i, n in enumerate(shape)) if keepdim else shape
    out = empty(shape, layout.contiguous_strides(shape), dtype, where)
    reference.apply(lambda x: np.prod(x.reshape(1) if x.ndim == 0 else x, axis=d, keepdims=keepdim and a.ndim > 0,
                                      dtype=dtype).reshape(shape), out, a)
    return out
