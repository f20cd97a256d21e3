"""contiguous() returns float64 whatever the storage's dtype (np.zeros without dtype)."""
EXERCISE = "1.7"

import math

import numpy as np

import minikernel.strides as mk


def contiguous(storage, shape, strides, offset=0):
    n = math.prod(shape)
    out = np.zeros(n)
    for i in range(n):
        out[i] = storage[mk.index_to_position(mk.to_index(i, shape), strides, offset)]
    return out
