"""Strides in the wrong order: the first dimension moves fastest (column-major)."""
EXERCISE = "1.1"


def contiguous_strides(shape):
    strides, step = [], 1
    for size in shape:
        strides.append(step)
        step *= max(size, 1)
    return tuple(strides)
