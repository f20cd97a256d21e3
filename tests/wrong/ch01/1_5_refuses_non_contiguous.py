"""view_strides returns None for every non-contiguous input, even ones torch can view."""
EXERCISE = "1.5"

import math

import minikernel.strides as mk


def view_strides(shape, strides, new_shape):
    new_shape = mk.infer_size(new_shape, math.prod(shape))
    if tuple(strides) != mk.contiguous_strides(shape):
        return None
    return mk.contiguous_strides(new_shape)
