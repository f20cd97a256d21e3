"""view_strides returns contiguous strides for any input, ignoring the input's strides."""
EXERCISE = "1.5"

import math

import minikernel.strides as mk


def view_strides(shape, strides, new_shape):
    return mk.contiguous_strides(mk.infer_size(new_shape, math.prod(shape)))
