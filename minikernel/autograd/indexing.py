"""``x[key]`` in full: ints, slices, ``...``, ``None``, integer tensors and boolean masks.

Basic indexing (ints, slices, ``...``, ``None``) gives a view; an integer-tensor or
boolean-mask index gives a copy (torch's advanced indexing, ``IndexBackward0``),
whose backward adds the gradient back at the indexed places (``index_put`` with
accumulate: an index used twice receives both gradients).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..aten.shape_rules import ZERO_DIM_INDEX, check_slice_step
from ..tensor import Tensor, bool_
from . import values as V
from .function import Function
from .grad_mode import is_grad_enabled

_np = V.array


def _numpy_key(x: Tensor, key: tuple) -> tuple:
    """The key as numpy understands it, after torch's checks."""
    out = []
    for k in key:
        if isinstance(k, Tensor):
            if k.dtype == bool_:
                out.append(_np(k))
            elif k.dtype.kind in "iu":
                out.append(_np(k).astype(np.int64))
            else:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(k, list):
            picked = np.asarray(k)
            if picked.size == 0:
                picked = picked.astype(np.int64)  # t[[]]: an empty long index, as in torch
            if picked.dtype.kind not in "biu":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            out.append(picked)
        elif isinstance(k, bool):
            out.append(np.asarray(k))
        elif k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer)):
            out.append(k)  # a slice's step is checked in order with the rest (check_bounds)
        else:
            raise TypeError(f"minikernel tensors index with ints and slices, `...`, None, integer tensors or "
                            f"boolean mask tensors, got {type(k).__name__} (e.g. t[1], t[:, 2:5], t[..., 0], "
                            f"t[mask])")
    return tuple(out)


def check_bounds(x: Tensor, key: tuple, check_picks: bool = True) -> None:
    """torch's errors, in torch's order: a 0-d tensor indexed by an int, too many indices; then left
    to right an int out of range (IndexError) or a slice's zero or negative step (ValueError);
    last the index arrays out of range (torch's kernel checks them)."""
    used = sum(1 if not (k is None or k is Ellipsis) else 0 for k in key)
    used += sum(k.ndim - 1 for k in key if isinstance(k, np.ndarray) and k.dtype == bool)  # a 0-d mask uses none
    if x.ndim == 0 and any(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key):
        raise IndexError(ZERO_DIM_INDEX)
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    dim, picks = 0, []
    for k in key:
        if isinstance(k, slice):
            check_slice_step(k.step)
        if k is Ellipsis:
            at = next(i for i, j in enumerate(key) if j is Ellipsis)  # (key.index compares arrays)
            dim = x.ndim - sum(j.ndim if isinstance(j, np.ndarray) and j.dtype == bool else 1
                               for j in key[at + 1:] if j is not None)
            continue
        if k is None:
            continue
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            size = x.shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {int(k)} is out of bounds for dimension {dim} with size {size}")
        elif (check_picks and isinstance(k, np.ndarray) and k.dtype != bool and k.size
              and 0 not in x.shape[:dim] + x.shape[dim + 1:]):  # (an empty result reads nothing: torch checks nothing)
            picks.append((k, dim))
        dim += k.ndim if isinstance(k, np.ndarray) and k.dtype == bool else 1
    if _picks_nothing(key):
        return  # the index arrays broadcast to an empty shape: torch reads nothing, checks nothing
    for k, dim in picks:
        size = x.shape[dim]
        bad = k[(k >= size) | (k < -size)]
        if bad.size:
            raise IndexError(f"index {int(bad.flat[0])} is out of bounds for dimension {dim} with size {size}")


def _picks_nothing(key: tuple) -> bool:
    """Whether the index arrays of ``key`` (a mask counts as its number of True elements)
    broadcast to a shape with no element."""
    shapes = [k.shape if k.dtype != bool else (int(k.sum()),) for k in key
              if isinstance(k, np.ndarray) and (k.dtype != bool or k.ndim > 0)]
    try:
        return bool(shapes) and 0 in np.broadcast_shapes(*shapes)
    except ValueError:
        return False  # they do not broadcast: the index kernel says so


class AdvancedIndex(Function):
    """``x[key]`` with integer tensors or boolean masks: a copy of the picked elements."""

    _torch_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, key: tuple) -> Tensor:
        ctx.shape, ctx.key = x.shape, key
        return V.compute("index.Tensor", x, key)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return IndexPutAccumulate.apply(grad, ctx.shape, ctx.key), None


class IndexPutAccumulate(Function):
    """Zeros of ``shape`` with ``grad`` added at ``key`` (repeated indices add up)."""

    _torch_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, grad: Tensor, shape: tuple, key: tuple) -> Tensor:
        ctx.key = key
        out = V.zeros(shape, dtype=grad.dtype)
        V.compute("index_put_", out, key, grad, True)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        return AdvancedIndex.apply(grad, ctx.key), None, None


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` after torch's checks, as torch computes it (``applySlicing``): the ints, ``None``s
    and slices are applied left to right as views (``select.int``, ``unsqueeze``, ``slice.Tensor``;
    nothing at all is ``alias``), then the integer tensors and masks, if any, pick a copy
    (``aten::index.Tensor``, numpy's rules among them)."""
    out, picks, changed = apply_slicing(x, key, check_picks=False)
    if picks is not None:
        if is_grad_enabled() and out.requires_grad:
            _ = out.grad_fn  # torch's autograd layer takes the edge first: a view it refuses to remake raises here
        check_bounds(out, picks)  # on the sliced view: an empty result checks nothing, as in torch
        return V.call("index.Tensor", out, picks)
    return out if changed else V.call("alias", x)


def apply_slicing(x: Tensor, key: Any, check_picks: bool = True) -> tuple[Tensor, tuple | None, bool]:
    """The first half of ``x[key]`` (and of ``x[key] = v``): the ints, ``None``s and slices of
    ``key`` applied as views. Returns the view, the advanced part still to apply to it (one
    entry per remaining dim: ``slice(None)`` or an index array; None when the key has no
    tensor, list or mask), and whether any view was taken. ``check_picks=False`` leaves the range
    check of the index arrays to the caller (``check_bounds(view, picks)``): a write checks them
    after its autograd checks, as torch's ``index_put_`` kernel does."""
    key = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    nkey = _numpy_key(x, key)
    check_bounds(x, nkey, check_picks)
    out, dim, changed, picks = x, 0, False, []
    for k in _without_ellipsis(nkey, x.ndim):
        if k is None:
            out, dim, changed = V.call("unsqueeze", out, dim), dim + 1, True
            picks.append(slice(None))
        elif isinstance(k, slice):
            if not _whole(k, out.shape[dim]):
                out, changed = V.call("slice.Tensor", out, dim, k.start, k.stop, 1 if k.step is None else k.step), True
            dim += 1
            picks.append(slice(None))
        elif isinstance(k, np.ndarray) and k.dtype == bool and k.ndim == 0:
            # a 0-d mask (or a Python bool) is torch's unsqueeze, then the index [0] (True) or [] (False)
            out, changed = V.call("unsqueeze", out, dim), True
            picks.append(np.zeros(1 if k else 0, np.int64))
            dim += 1
        elif isinstance(k, np.ndarray):  # an integer array takes one dim, a mask as many as it has
            picks.append(k)
            dim += k.ndim if k.dtype == bool else 1
        else:
            out, changed = V.call("select.int", out, dim, int(k)), True
    advanced = any(isinstance(k, np.ndarray) for k in picks)
    return out, (tuple(picks) if advanced else None), changed


def _without_ellipsis(key: tuple, ndim: int) -> tuple:
    """``...`` replaced by the full slices of the dims nothing else names."""
    if not any(k is Ellipsis for k in key):  # (`in` would compare arrays element-wise)
        return key
    named = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == bool else 1
                for k in key if k is not None and k is not Ellipsis)
    at = next(i for i, k in enumerate(key) if k is Ellipsis)
    return key[:at] + (slice(None),) * (ndim - named) + key[at + 1:]


def _whole(k: slice, size: int) -> bool:
    return k.start in (None, 0) and (k.stop is None or k.stop >= size) and k.step in (None, 1)
