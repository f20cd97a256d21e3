"""Takes the larger size in every dimension, never raising for incompatible sizes."""
EXERCISE = "1.4"


def broadcast_shape(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))
