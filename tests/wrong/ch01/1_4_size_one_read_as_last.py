"""broadcast_index gives -1 ("the last element, the only one") in size-1 dimensions: Python indexing reads the same element, a position from the strides does not."""
EXERCISE = "1.4"


def broadcast_index(big_index, big_shape, shape):
    skip = len(big_shape) - len(shape)
    return tuple(-1 if size == 1 else big_index[skip + d] for d, size in enumerate(shape))
