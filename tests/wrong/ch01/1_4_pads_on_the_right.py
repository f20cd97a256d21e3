"""The shorter shape is padded with 1s on the right instead of the left."""
EXERCISE = "1.4"


def broadcast_shape(a, b):
    n = max(len(a), len(b))
    a, b = tuple(a) + (1,) * (n - len(a)), tuple(b) + (1,) * (n - len(b))
    out = []
    for d, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"shapes {a} and {b} cannot be broadcast at dimension {d - n}: {x} vs {y}")
        out.append(y if x == 1 else x)
    return tuple(out)
