"""Indexing (ATen's ``TensorAdvancedIndexing.cpp`` and ``TensorShape.cpp``'s basic indexing):
the CPU/CUDA backend kernels of ``aten::index`` (ints and slices: a view), ``aten::index.Tensor``
(integer tensors and boolean masks: a copy) and ``aten::index_put_`` (a write).

``Tensor.__getitem__`` / ``__setitem__`` decompose a key as torch's do and call these.
``index`` computes the view's header with your chapter 01 ``index_to_position`` (numpy's
header stands in while it is a stub, as in ``shape.py``); ``index_tensor`` and
``index_put_`` compute with numpy (CPU only). ``index_put_`` only writes: the version bump is
the ``ADInplaceOrView`` kernel's and the graph the ``Autograd`` kernel's.
"""
from __future__ import annotations

import numpy as np

from .. import strides as S
from ..kernels import layout
from ..tensor import Tensor
from . import shape_rules as R
from .shape import _stand_in, numpy_header
from .tensor_iterator import _check_operand, device_of, empty


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


def index_tensor(a: Tensor, indices: tuple) -> Tensor:
    """``a[indices]`` with integer tensors or boolean masks among ``indices`` (checked by the
    caller): a copy of the picked elements, numpy's rules for where their dims go. Matches
    ``torch.ops.aten.index.Tensor`` as ``Tensor.__getitem__`` uses it."""
    _check_operand(a, "index")
    device_of("index", a)
    key = tuple(k.to_numpy() if isinstance(k, Tensor) else k for k in indices)
    if a.numel() == 0 and not any(isinstance(k, np.ndarray) and k.dtype == bool for k in key):
        # the result is empty too: torch reads nothing, so it checks no index into a dim of size > 0
        key = tuple(np.clip(k, -n, n - 1) if isinstance(k, np.ndarray) and n > 0 else k for k, n in zip(key, a.shape))
    picked = np.ascontiguousarray(a.to_numpy()[key])
    out = empty(picked.shape, layout.contiguous_strides(picked.shape), a.dtype, "cpu")
    out._numpy_view()[...] = picked
    return out


def _key(indices: tuple) -> tuple:
    """The index as numpy takes it: tensors become arrays (a boolean mask stays boolean)."""
    return tuple(k.to_numpy() if isinstance(k, Tensor) else k for k in indices)


def index_put_(self: Tensor, indices: tuple, values: Tensor, accumulate: bool = False) -> Tensor:
    """``self[indices] = values`` (``accumulate``: ``self[indices] += values``, where an index
    named twice adds twice). ``indices`` is a tuple of ints, slices, ``None``, ``...``, integer
    tensors and boolean masks, checked by the caller. Matches ``Tensor.index_put_``."""
    key, given = _key(indices), values.to_numpy()
    if self.numel() == 0 and not any(isinstance(k, np.ndarray) and k.size and n == 0 for k, n in zip(key, self.shape)):
        return self  # nothing to write (and torch checks no index it does not use)
    target = self._numpy_view()
    if accumulate:
        np.add.at(target, key, given)
    else:
        target[key] = given
    return self
