"""torch's memory-overlap refusals (``aten/src/ATen/MemoryOverlap.cpp``), for every write.

A write may not go into a tensor that names one element twice (an expanded tensor), and
may not read an input that shares only part of the written memory: element by element,
it would read values it has already overwritten. Where the layouts make that hard to
decide (not dense), torch lets the write through, and so does this.

Duck-typed (shape, strides, ``data_ptr``): it sits below the Tensor.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

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
