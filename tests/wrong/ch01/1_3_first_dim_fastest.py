"""Row-major order reversed: the first dimension varies fastest."""
EXERCISE = "1.3"

import math


def to_index(ordinal, shape):
    if not 0 <= ordinal < math.prod(shape):
        raise IndexError(f"ordinal {ordinal} is out of range for shape {tuple(shape)}")
    index = []
    for size in shape:
        index.append(ordinal % size)
        ordinal //= size
    return tuple(index)
