"""``x[key] = value`` in full, as torch computes it (``applySlicing`` then ``index_put_``).

The ints, ``None``s and slices of ``key`` are applied first, as views of ``x``
(``indexing.apply_slicing``). Then:

* no tensor, list or mask left: the value is written into that view — ``fill_`` for a
  number, ``copy_`` (broadcast) for a tensor; while recording, a write through a view
  gives the base a ``CopySlices`` node (``inplace.py``);
* otherwise ``index_put_`` writes the value (broadcast to the picked shape) at the
  picked places of the view. While recording, the view takes an ``IndexPutBackward0``
  node: the old values get the gradient with zeros where the write landed, the value
  gets the gradient read back at those places, summed to its own shape.

``x[key] += v`` is Python's ``x[key] = x[key].__iadd__(v)``: a read, an add, then this.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dispatch
from ..aten.memory_overlap import check_overlap
from ..dispatch import DispatchKey
from ..kernels.layout import has_internal_overlap
from ..tensor import Tensor, copy_to, fill_into
from . import values as V
from .function import Function
from .grad_mode import is_grad_enabled
from .indexing import AdvancedIndex, apply_slicing, check_bounds
from .inplace import _original, rebase_history
from .pointwise import _reduce_to

Key = tuple  #: one entry per dim of the target: ``slice(None)`` or an index array


class IndexPut(Function):
    """``x.index_put(key, values)``: a copy of ``x`` with ``values`` written at ``key``."""

    _torch_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, key: Key, values: Tensor) -> Tensor:
        ctx.key, ctx.values_shape = key, values.shape
        out = V.compute("clone", x)
        V.compute("index_put_", out, key, values, False)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        to_x = IndexPut.apply(grad, ctx.key, V.zeros((), dtype=grad.dtype))
        to_values = _reduce_to(AdvancedIndex.apply(grad, ctx.key), ctx.values_shape)
        return to_x, None, to_values


def index_put_(x: Tensor, key: Key, values: Tensor) -> Tensor:
    """``x[key] = values`` for an advanced ``key`` (``Tensor.index_put_``), recorded when autograd is involved."""
    recording = is_grad_enabled() and (x.requires_grad or values.requires_grad)
    if recording:
        x._check_inplace()  # first, as torch's autograd layer refuses before the kernel looks at the indices
        _ = x.grad_fn, values.grad_fn  # then it reads both histories (a rebased multi-output view refuses)
    # torch's masked_fill path (canDispatchToMaskedFill): a one-element value and one mask, no other
    # index array; it reads the value once, first. Any other key is checked for overlap first.
    arrays = [k for k in key if isinstance(k, np.ndarray)]
    masked_fill = values.numel() == 1 and len(arrays) == 1 and arrays[0].dtype == bool
    if not masked_fill:
        check_overlap(x, [values], allow_full=False, internal=False)
    if has_internal_overlap(x.shape, x.stride()):
        warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
                      "performing this operation.", UserWarning, stacklevel=3)
    values = _check_values(x, key, values)  # the value's shape first, then the indices, as torch's kernel
    check_bounds(x, key)
    if not recording:
        return V.call("index_put_", x, key, values)
    result = IndexPut.apply(_original(x), key, values)  # the graph (and the values) out of place ...
    with dispatch.exclude_keys(DispatchKey.Autograd):  # ... but only the picked elements are written: an
        dispatch.registry.get("index_put_")(x, key, values)  # expanded x must not get the rest copied over them
    rebase_history(x, result, result.grad_fn)
    return x


def _check_values(x: Tensor, key: Key, values: Tensor) -> Tensor:
    """``values`` without leading size-1 dims beyond the picked shape (torch drops them), or
    torch's refusal of a value that does not broadcast to the picked shape."""
    picked = _picked_shape(x.shape, key)
    extra = values.ndim - len(picked)
    if extra > 0 and all(n == 1 for n in values.shape[:extra]):
        values = values.reshape(values.shape[extra:])
    lead = len(picked) - values.ndim
    if lead < 0 or any(v not in (1, p) for v, p in zip(values.shape, picked[lead:])):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(picked)}")
    return values


def _picked_shape(shape: tuple, key: Key) -> tuple:
    """The shape ``x[key]`` has, whether or not the indices are in range (they are checked after
    the value's shape, as torch does; in an empty ``x`` one past a dim's end is no error at all)."""
    key = tuple(np.clip(k, -n, n - 1) if isinstance(k, np.ndarray) and k.dtype != bool and n > 0 else k
                for k, n in zip(key, shape))
    return np.empty(shape, dtype=np.bool_)[key].shape


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``: ``value`` a number or a tensor (broadcast, cast to ``x``'s dtype)."""
    if not isinstance(value, (Tensor, bool, int, float, np.generic)):
        value = V.wrap(np.asarray(value), x.dtype)
    target, picks, _ = apply_slicing(x, key, check_picks=False)
    if picks is not None:
        values = value if isinstance(value, Tensor) else V.wrap(np.asarray(value), x.dtype)  # (as torch: no op)
        ones = next((i for i, n in enumerate(values.shape) if n != 1), values.ndim)
        if ones:  # torch views the value without its leading 1s: another tensor than the target, even for x[[0]] = x
            values = values.view(values.shape[ones:])
        index_put_(target, picks, values)
    elif isinstance(value, Tensor):
        copy_to(target, value)
    else:
        fill_into(target, value)
