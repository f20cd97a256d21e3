"""The storage offset is forgotten."""
EXERCISE = "1.2"


def index_to_position(index, strides, offset=0):
    return sum(i * s for i, s in zip(index, strides))
