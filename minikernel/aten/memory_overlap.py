"""torch's memory-overlap refusals (``aten/src/ATen/MemoryOverlap.cpp``), for every write.

A write may not go into a tensor that names one element twice (an expanded tensor), and
may not read an input that shares only part of the written memory: element by element,
it would read values it has already overwritten. Where the layouts make that hard to
decide (not dense), torch lets the write through, and so does this.

When the layouts let such a write through, torch's kernel still reads each element as it
writes it, so an element written earlier is read with its new value: ``in_kernel_order``
computes what that loop leaves.

Duck-typed (shape, strides, ``data_ptr``, storage): it sits below the Tensor.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..kernels import layout


def _dense_range(t: Any) -> Optional[tuple[int, int]]:
    """Byte range of a non-overlapping, dense, non-empty tensor; None otherwise."""
    if not t.numel() or not layout.is_non_overlapping_and_dense(t.shape, t.stride()):
        return None
    return t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()


_PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                    "single memory location. Please clone() the tensor before performing the operation.")


def check_overlap(out: Any, inputs: Sequence[Any], allow_full: bool = True, internal: bool = True) -> None:
    """torch's memory-overlap refusals for a write into ``out`` that reads ``inputs``: ``out`` may
    not name one element twice (an expanded tensor), and no input may share part of its memory
    (``allow_full``: the very same elements are fine, as in ``x.add_(x)``; ``index_put_`` refuses
    even those; ``internal=False``: ``out`` may be expanded, as ``index_put_`` only warns). Layouts torch calls "too hard" to decide (not dense) are let through, as torch does."""
    if internal and layout.has_internal_overlap(out.shape, out.stride()):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    if not allow_full and any(t is out for t in inputs):  # the same tensor, even an empty one
        raise RuntimeError(_PARTIAL_OVERLAP)
    written = _dense_range(out)
    for t in inputs:
        seen = _dense_range(t) if hasattr(t, "data_ptr") else None
        if written is None or seen is None:
            continue  # torch calls this "too hard" to decide, and allows it
        full = written == seen and out.stride() == t.stride()
        if (not full or not allow_full) and written[0] < seen[1] and seen[0] < written[1]:
            raise RuntimeError(_PARTIAL_OVERLAP)


def reads_what_it_writes(out: Any, inputs: Sequence[Any]) -> bool:
    """Whether an input shares ``out``'s memory without being ``out``'s very elements (same
    offset, shape and strides), so that writing element by element changes what is read next."""
    return any(getattr(t, "_storage", None) is out._storage and (t.storage_offset(), t.shape, t.stride())
               != (out.storage_offset(), out.shape, out.stride()) for t in inputs)


def _loop_order(shape: Sequence[int], strides: Sequence[int]) -> list[int]:
    """The dims of ``out`` from the outermost loop to the innermost, as torch's ``TensorIterator``
    orders them (``reorder_dimensions``): the smallest stride innermost; equal strides keep the
    tensor's order (the later dim inner)."""
    return sorted(range(len(shape)), key=lambda d: -abs(strides[d]))


def in_kernel_order(op: Callable, out: Any, other: Any) -> np.ndarray:
    """``out = op(out, other)`` as torch's CPU kernel computes it in place, one element at a time in its
    loop order, ``other`` (a tensor on the same storage, broadcast to ``out``'s shape) read from
    memory the loop may have written already. Runs on a copy of the storage and returns ``out``'s new values (to be written by the caller)."""
    storage = np.array(out._storage, copy=True)

    def window(t: Any) -> np.ndarray:
        size = storage.itemsize
        return np.lib.stride_tricks.as_strided(storage[t.storage_offset():], t.shape,
                                               tuple(st * size for st in t.stride()), writeable=True)
    target = window(out)
    source = np.broadcast_to(window(other), out.shape)  # a view of the same copy: it sees each write
    order = _loop_order(out.shape, out.stride())
    for index in np.ndindex(*(out.shape[d] for d in order)):
        at = [0] * len(out.shape)
        for d, i in zip(order, index):
            at[d] = i
        at = tuple(at)
        target[at] = op(target[at], source[at])
    return target.copy()
