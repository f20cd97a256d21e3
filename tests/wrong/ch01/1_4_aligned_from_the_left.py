"""broadcast_index lines the small shape up with the big one from the left."""
EXERCISE = "1.4"


def broadcast_index(big_index, big_shape, shape):
    return tuple(0 if size == 1 else big_index[d] for d, size in enumerate(shape))
