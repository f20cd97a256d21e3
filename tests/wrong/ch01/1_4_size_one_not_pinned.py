"""broadcast_index copies the big index into size-1 dimensions instead of pinning them to 0."""
EXERCISE = "1.4"


def broadcast_index(big_index, big_shape, shape):
    skip = len(big_shape) - len(shape)
    return tuple(big_index[skip + d] for d in range(len(shape)))
