"""The range check lets ordinal == numel through (<= instead of <)."""
EXERCISE = "1.3"

import math


def to_index(ordinal, shape):
    if not 0 <= ordinal <= math.prod(shape):
        raise IndexError(f"ordinal {ordinal} is out of range for shape {tuple(shape)}")
    index = [0] * len(shape)
    for d in range(len(shape) - 1, -1, -1):
        index[d] = ordinal % shape[d]
        ordinal //= shape[d]
    return tuple(index)
