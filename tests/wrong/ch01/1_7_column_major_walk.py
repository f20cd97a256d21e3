"""contiguous() writes the elements in column-major order."""
EXERCISE = "1.7"

import math

import numpy as np

import minikernel.strides as mk


def contiguous(storage, shape, strides, offset=0):
    n = math.prod(shape)
    out = np.empty(n, dtype=storage.dtype)
    for i in range(n):
        index, rest = [], i
        for size in shape:
            index.append(rest % size)
            rest //= size
        out[i] = storage[mk.index_to_position(index, strides, offset)]
    return out
