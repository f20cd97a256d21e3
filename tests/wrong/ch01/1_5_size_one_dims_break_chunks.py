"""view_strides treats a size-1 dimension's stride as meaningful, ending a chunk there."""
EXERCISE = "1.5"

import math

import minikernel.strides as mk


def view_strides(shape, strides, new_shape):
    new_shape = mk.infer_size(new_shape, math.prod(shape))
    if len(shape) == 0:
        return (1,) * len(new_shape)
    if math.prod(shape) == 0:
        return tuple(strides) if tuple(shape) == tuple(new_shape) else mk.contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or strides[d - 1] != tensor_numel * base:
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base = strides[d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None
