"""Reference solutions for chapter 01 (``minikernel/strides.py``)."""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

import minikernel.strides as mk
from minikernel.strides import Index, Shape, Storage, Strides


def contiguous_strides(shape: Sequence[int]) -> Strides:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    return tuple(strides)


def index_to_position(index: Sequence[int], strides: Sequence[int], offset: int = 0) -> int:
    position = offset
    for i, s in zip(index, strides):
        position += i * s
    return position


def to_index(ordinal: int, shape: Sequence[int]) -> Index:
    if not 0 <= ordinal < math.prod(shape):
        raise IndexError(f"ordinal {ordinal} is out of range for shape {tuple(shape)} "
                         f"with {math.prod(shape)} elements")
    index = [0] * len(shape)
    for d in range(len(shape) - 1, -1, -1):
        index[d] = ordinal % shape[d]
        ordinal //= shape[d]
    return tuple(index)


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> Shape:
    n = max(len(a), len(b))
    a_padded = (1,) * (n - len(a)) + tuple(a)
    b_padded = (1,) * (n - len(b)) + tuple(b)
    out = []
    for d, (x, y) in enumerate(zip(a_padded, b_padded)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"shapes {tuple(a)} and {tuple(b)} cannot be broadcast: at dimension "
                f"{d - n} the sizes are {x} and {y}; they must be equal or one of them 1")
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcast_index(big_index: Sequence[int], big_shape: Sequence[int], shape: Sequence[int]) -> Index:
    skip = len(big_shape) - len(shape)
    return tuple(0 if size == 1 else big_index[skip + d] for d, size in enumerate(shape))


def infer_size(shape: Sequence[int], numel: int) -> Shape:
    shown = "[" + ", ".join(str(s) for s in shape) + "]"
    known, infer_dim = 1, None
    for d, size in enumerate(shape):
        if size == -1:
            if infer_dim is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer_dim = d
        elif size >= 0:
            known *= size
        else:
            raise RuntimeError(f"invalid shape dimension {size} at index {d} of shape {shown}")
    if numel == known or (infer_dim is not None and known > 0 and numel % known == 0):
        out = list(shape)
        if infer_dim is not None:
            if known == 0:  # 0 elements: any size fits the -1, so torch refuses to guess
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {shown} because the "
                    "unspecified dimension size -1 can be any value and is ambiguous")
            out[infer_dim] = numel // known
        return tuple(out)
    raise RuntimeError(f"shape '{shown}' is invalid for input of size {numel}")


def view_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> Optional[Strides]:
    new_shape = mk.infer_size(new_shape, math.prod(shape))
    if len(shape) == 0:
        return (1,) * len(new_shape)
    if math.prod(shape) == 0:
        if tuple(shape) == tuple(new_shape):
            return tuple(strides)
        return mk.contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        chunk_ends = d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base_stride)
        if chunk_ends:
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base_stride = strides[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def permute_strides(shape: Sequence[int], strides: Sequence[int], dims: Sequence[int]) -> tuple[Shape, Strides]:
    return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims)


def expand_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> Strides:
    n, extra = len(new_shape), len(new_shape) - len(shape)
    if extra < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({n}) must be greater or "
            f"equal to the number of dimensions in the tensor ({len(shape)})")
    sizes, out = [0] * n, [0] * n
    for i in range(n - 1, -1, -1):
        d = i - extra  # the matching input dimension, < 0 for a new leading one
        size = shape[d] if d >= 0 else 1
        stride = strides[d] if d >= 0 else (sizes[i + 1] * out[i + 1] if i + 1 < n else 0)
        target = new_shape[i]
        if target == -1:
            if d < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            target = size
        if size != target:
            if size != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target}) must match the existing size "
                    f"({size}) at non-singleton dimension {i}.  Target sizes: {list(new_shape)}.  "
                    f"Tensor sizes: {list(shape)}")
            size, stride = target, 0
        sizes[i], out[i] = size, stride
    return tuple(out)


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    if math.prod(shape) == 0:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def contiguous(storage: Storage, shape: Sequence[int], strides: Sequence[int], offset: int = 0) -> Storage:
    n = math.prod(shape)
    out = np.empty(n, dtype=storage.dtype)
    for i in range(n):
        out[i] = storage[mk.index_to_position(mk.to_index(i, shape), strides, offset)]
    return out
