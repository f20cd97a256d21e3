"""Joining tensors: the CPU backend kernels of ``aten::cat`` and ``aten::stack``.

Both check what torch checks (a non-empty list, equal sizes off the joined dim,
one number of dimensions), promote the dtypes as ``torch.result_type`` does over
the list, and write a new contiguous tensor on the numpy reference backend. The
graph (``CatBackward0``, ``StackBackward0``) is ``autograd/joining.py``'s.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import shape_rules as R
from .kernels.layout import contiguous_strides
from .ops import result_type
from .tensor import Tensor


def _tensors(name: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {list(tensors).index(t)} in argument 0, but got "
                            f"{type(t).__name__}")
    if any(t.is_cuda for t in tensors):
        raise RuntimeError(f"{name}(): minikernel joins cpu tensors only; move them with .cpu() first")
    return list(tensors)


def _wrap(values: np.ndarray) -> Tensor:
    flat = np.array(values, order="C").reshape(-1)
    return Tensor(flat, values.shape, contiguous_strides(values.shape), 0)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors one after another along ``dim``. Matches ``torch.cat`` (1-d empty tensors are
    skipped, as torch's legacy rule allows)."""
    tensors = _tensors("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    dtype = result_type(*tensors)
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    first = kept[0]
    d = R.wrap_dim(dim, first.ndim)
    for i, t in enumerate(tensors):
        if t.ndim == 1 and t.shape[0] == 0:
            continue
        if t.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {t.ndim}")
        for k, (a, b) in enumerate(zip(first.shape, t.shape)):
            if k != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but "
                                   f"got size {b} for tensor number {i} in the list.")
    return _wrap(np.concatenate([t.to_numpy().astype(dtype) for t in kept], axis=d))


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors side by side along a new dimension ``dim``. Matches ``torch.stack``."""
    tensors = _tensors("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = R.wrap_dim(dim, tensors[0].ndim + 1)
    for i, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    dtype = result_type(*tensors)
    return _wrap(np.stack([t.to_numpy().astype(dtype) for t in tensors], axis=d))
