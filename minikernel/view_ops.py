"""Views of a tensor, and its contiguous copy: the CPU/CUDA backend kernels of ``aten::view``,
``aten::permute``, ``aten::expand``, ``aten::index`` (ints and slices), ... (chapter 01).

A view is a new header over the same memory. Each kernel here computes that header
with your chapter 01 code (``infer_size``/``view_strides``, ``permute_strides``,
``expand_strides``, ``index_to_position``; ``contiguous`` for the copy). Autograd's
view Functions call the same kernels through the dispatcher, so there is one path.

Inside the dispatcher, while the exercise a kernel needs is still its stub, numpy
computes the same header instead (``numpy_header``: numpy's views follow torch's
rules), so later chapters run whether or not chapter 01 is finished; chapter 01 and
its exercise tests switch that off (``launch.set_reference_fallback``). The shape
checks and their messages are ``shape_rules.py``'s on every path.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import ops, shape_rules as R, strides as S
from .kernels import jit, launch
from .kernels.layout import contiguous_strides
from .tensor import Tensor, _wrap_dim


def _stand_in(*exercises: Callable) -> bool:
    """Whether numpy computes the header: inside the dispatcher, and one of ``exercises`` is a stub."""
    return launch.stand_in_allowed() and any(jit.stub_error(fn) is not None for fn in exercises)


def numpy_header(x: Tensor, fn: Callable[[np.ndarray], np.ndarray]) -> Tensor:
    """``x`` viewed through numpy's ``fn``: computed on a header over one element (no data is
    read), so it works for a tensor on any device."""
    item = x.dtype.itemsize
    buffer = np.zeros(1, x.dtype)
    array = np.lib.stride_tricks.as_strided(buffer, x.shape, tuple(s * item for s in x.stride()))
    out = fn(array)
    moved = out.__array_interface__["data"][0] - buffer.__array_interface__["data"][0]
    return x._with(out.shape, tuple(s // item for s in out.strides), x.storage_offset() + moved // item)


def view(x: Tensor, shape: Sequence[int]) -> Tensor:
    """``x.view(*shape)``: the same memory read in another shape, if the strides allow it."""
    shape = R.infer_shape(tuple(shape), x.numel())
    if _stand_in(S.infer_size, S.view_strides):
        try:
            return numpy_header(x, lambda a: np.reshape(a, shape, copy=False))
        except ValueError:
            raise RuntimeError(R.VIEW_NOT_POSSIBLE) from None
    new_shape = S.infer_size(shape, x.numel())
    new_strides = S.view_strides(x.shape, x.stride(), new_shape)
    if new_strides is None:
        raise RuntimeError(R.VIEW_NOT_POSSIBLE)
    return x._with(new_shape, new_strides)


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """A view when the strides allow one, else a view of a contiguous copy (like torch)."""
    try:
        return view(x, shape)
    except RuntimeError as err:
        if str(err) != R.VIEW_NOT_POSSIBLE:
            raise
    out = view(contiguous(x), shape)
    out._base = None  # a view of a private copy is no view of x: torch's _unsafe_view isn't one either
    return out


def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    dims = R.check_permute(tuple(dims), x.ndim)
    if _stand_in(S.permute_strides):
        return numpy_header(x, lambda a: np.transpose(a, dims))
    shape, strides = S.permute_strides(x.shape, x.stride(), dims)
    return x._with(shape, strides)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    if x.ndim == 0:
        return x._with(x.shape, x.stride())  # a new view (torch's transpose never returns self)
    dim0, dim1 = _wrap_dim(dim0, x.ndim), _wrap_dim(dim1, x.ndim)
    order = list(range(x.ndim))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    return permute(x, order)


def t(x: Tensor) -> Tensor:
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return transpose(x, 0, 1) if x.ndim == 2 else x._with(x.shape, x.stride())  # a 1-d t() is a new view


def expand(x: Tensor, sizes: Sequence[int]) -> Tensor:
    shape = R.expand_shape(x.shape, tuple(sizes), x.type())  # torch's errors; -1 resolved
    if _stand_in(S.expand_strides):
        return numpy_header(x, lambda a: np.broadcast_to(a, shape))
    return x._with(shape, S.expand_strides(x.shape, x.stride(), tuple(sizes)))


def index(x: Tensor, key: tuple) -> Tensor:
    """``x[key]`` for ints and slices (after torch's range checks): a view."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    starts, shape, strides = [], [], []
    for d, k in enumerate(key):
        size, stride = x.shape[d], x.stride(d)
        if isinstance(k, slice):
            R.check_slice_step(k.step)
            start, stop, step = k.indices(size)
            starts.append(start)
            shape.append(max(0, -(-(stop - start) // step)))
            strides.append(stride * step)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            i = int(k) + size if k < 0 else int(k)
            if not 0 <= i < size:
                raise IndexError(f"index {int(k)} is out of bounds for dimension {d} with size {size}")
            starts.append(i)
        else:
            raise TypeError(f"minikernel tensors index with ints and slices only, got {type(k).__name__} "
                            "(e.g. t[1], t[:, 2:5], t[::2])")
    if _stand_in(S.index_to_position):
        return numpy_header(x, lambda a: a[(*key, Ellipsis)])  # the Ellipsis keeps a 0-d result a view
    shape += x.shape[len(key):]
    strides += x.stride()[len(key):]
    return x._with(shape, strides, S.index_to_position(starts, x.stride()[:len(key)], x.storage_offset()))


def contiguous(x: Tensor) -> Tensor:
    """``x`` if row-major contiguous, else a row-major copy (your ``contiguous``, 1.7; on the GPU
    the map kernel's copy, exercise 2.6)."""
    if x.is_contiguous():
        return x
    if x.is_cuda:
        return ops.contiguous(x)
    if _stand_in(S.contiguous):
        flat = np.ascontiguousarray(x._numpy_view()).reshape(-1)
    else:
        flat = S.contiguous(x._storage, x.shape, x.stride(), x.storage_offset())
    return Tensor(flat, x.shape, contiguous_strides(x.shape), 0)


def as_strided(x: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset=None) -> Tensor:
    """A header of ``size`` and ``stride`` over ``x``'s storage, at ``storage_offset`` (``x``'s
    own when None). Matches ``torch.as_strided``."""
    return x._with(size, stride, storage_offset)
