"""Layouts for element-wise kernels: how PyTorch's TensorIterator lays out and walks memory.

Three questions every element-wise operation answers before its kernel runs:

1. **What strides does a new output get?** Not always contiguous: ``x.t().exp()`` comes
   back transposed too, so it can be written in the order ``x.t()`` is read.
   ``output_strides`` ports TensorIterator's rule (``fast_set_up`` and
   ``reorder_dimensions`` in ATen's ``TensorIterator.cpp``).
2. **In which order should the kernel walk the elements?** Fastest-in-memory
   dimension last, so consecutive iterations touch neighbouring addresses.
3. **Can dimensions be merged?** Two dimensions that every operand lays out
   back to back are one longer dimension (``coalesce``); a contiguous or uniformly
   transposed operation becomes a single flat loop.

Nothing here reads or writes elements: it is arithmetic on shapes and strides.
"""
from __future__ import annotations

import math
from typing import Sequence

Shape = tuple[int, ...]
Strides = tuple[int, ...]


def contiguous_strides(shape: Sequence[int]) -> Strides:
    """Row-major strides, size-0 dimensions counted as 1 (``torch.empty(shape).stride()``)."""
    out, step = [], 1
    for size in reversed(tuple(shape)):
        out.append(step)
        step *= max(size, 1)
    return tuple(reversed(out))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """``Tensor.is_contiguous()``: row-major, size-1 dimensions ignored, empty counts."""
    if math.prod(shape) == 0:
        return True
    expected = 1
    for size, stride in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def is_channels_last(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """``is_contiguous(memory_format=torch.channels_last)`` for 4-D tensors (NHWC order)."""
    if len(shape) != 4:
        return False
    expected = 1
    for d in (1, 3, 2, 0):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def channels_last_strides(shape: Sequence[int]) -> Strides:
    n, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def is_non_overlapping_and_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Every element has its own storage slot and the slots form one block without gaps."""
    shape, strides = tuple(shape), tuple(strides)
    if is_contiguous(shape, strides) or is_channels_last(shape, strides):
        return True  # as c10 computes it (so every empty tensor counts)
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    # size-1 dimensions last, the rest by stride (c10's compute_non_overlapping_and_dense)
    order = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, strides[d] if shape[d] >= 2 else 0))
    required = 1
    for d in order:
        if shape[d] < 2:
            return True
        if strides[d] != required:
            return False
        required *= shape[d]
    return True


def has_internal_overlap(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """True when two elements surely share a slot (a stride-0 dimension of size > 1)."""
    if is_non_overlapping_and_dense(shape, strides):
        return False
    return any(stride == 0 and size > 1 for size, stride in zip(shape, strides))


def broadcast_strides(shape: Sequence[int], in_shape: Sequence[int], in_strides: Sequence[int]) -> Strides:
    """Strides of an input seen at the output's ``shape``: 0 along broadcast dimensions."""
    lead = len(shape) - len(in_shape)
    out = [0] * lead
    for size, in_size, stride in zip(tuple(shape)[lead:], in_shape, in_strides):
        out.append(0 if (in_size == 1 and size != 1) else stride)
    return tuple(out)


def output_strides(shape: Sequence[int], inputs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> Strides:
    """Strides PyTorch gives the output of an element-wise op with these inputs.

    Args:
        shape: the (broadcast) output shape.
        inputs: ``(shape, strides)`` of each input as given (not yet broadcast).

    Matches: ``torch.add(x, y).stride()``, ``torch.exp(x).stride()``, ...
    """
    shape = tuple(shape)
    headers = [(tuple(s), tuple(st)) for s, st in inputs]
    if all(s == shape for s, _ in headers):  # TensorIterator's fast set-up
        if all(is_contiguous(s, st) for s, st in headers):
            return contiguous_strides(shape)
        if all(is_channels_last(s, st) for s, st in headers):
            return channels_last_strides(shape)
        if all(is_non_overlapping_and_dense(s, st) for s, st in headers) and len({st for _, st in headers}) == 1:
            return headers[0][1]
    nd = len(shape)
    if nd == 0:
        return ()
    seen = [broadcast_strides(shape, s, st) for s, st in headers]

    def should_swap(d0: int, d1: int) -> int:
        """1 if d0 should come after d1 (be slower), -1 if before, 0 if no operand says."""
        for strides in seen:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue  # broadcast along one of them: this operand has no opinion
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(nd - 1, -1, -1))  # fastest first; starts as row-major
    for i in range(1, nd):  # insertion sort that tolerates "no opinion"
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    if perm == list(range(nd - 1, -1, -1)):
        return contiguous_strides(shape)
    out, step = [0] * nd, 1
    for d in perm:
        out[d] = step
        step *= shape[d]
    return tuple(out)


def copy_strides(shape: Sequence[int], strides: Sequence[int]) -> Strides:
    """Strides of a copy made with ``torch.empty_like`` / ``.to()`` (``preserve_format``):
    kept when non-overlapping and dense, else dense in the same dimension order."""
    if is_non_overlapping_and_dense(shape, strides):
        return tuple(strides)
    return output_strides(shape, [(shape, strides)])


def iteration_layout(shape: Sequence[int], *strides: Sequence[int]) -> tuple[Shape, list[Strides]]:
    """Reorder and merge dimensions for a kernel: the same elements, fewer and longer loops.

    ``strides[0]`` is the output's. Dimensions of size 1 are dropped, the rest are
    sorted so the output's smallest stride comes last, and neighbours that every
    operand lays out back to back (``stride[d-1] == stride[d] * shape[d]``) are merged.
    Always returns at least one dimension.

    Example::

        >>> iteration_layout((3, 4), (1, 3), (1, 3))   # x.t().exp(): one flat loop
        ((12,), [(1,), (1,)])
    """
    keep = [d for d, size in enumerate(shape) if size != 1]
    keep.sort(key=lambda d: -strides[0][d])  # stable: ties keep their order
    dims = [[shape[d], [st[d] for st in strides]] for d in keep]
    merged: list = []
    for size, sts in dims:
        if merged and all(prev == s * size for prev, s in zip(merged[-1][1], sts)):
            merged[-1][0] *= size
            merged[-1][1] = sts
        else:
            merged.append([size, sts])
    if not merged:
        return (1,), [(0,) for _ in strides]
    new_shape = tuple(size for size, _ in merged)
    return new_shape, [tuple(sts[i] for _, sts in merged) for i in range(len(strides))]


def memory_span(shape: Sequence[int], strides: Sequence[int], offset: int) -> tuple[int, int]:
    """First and one-past-last storage position an (non-empty) header can touch."""
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
    return offset, last + 1
