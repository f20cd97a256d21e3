"""contiguous() copies the first numel storage elements, as if the input were contiguous."""
EXERCISE = "1.7"

import math

import numpy as np


def contiguous(storage, shape, strides, offset=0):
    n = math.prod(shape)
    return np.array(storage[offset:offset + n], dtype=storage.dtype)
