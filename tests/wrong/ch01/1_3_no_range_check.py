"""An ordinal past the end wraps around instead of raising IndexError."""
EXERCISE = "1.3"


def to_index(ordinal, shape):
    index = [0] * len(shape)
    for d in range(len(shape) - 1, -1, -1):
        index[d] = ordinal % shape[d]
        ordinal //= shape[d]
    return tuple(index)
