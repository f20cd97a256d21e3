"""The broadcast error names the two sizes but not the whole shapes."""
EXERCISE = "1.4"


def broadcast_shape(a, b):
    n = max(len(a), len(b))
    a_, b_ = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for d, (x, y) in enumerate(zip(a_, b_)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"cannot broadcast: at dimension {d - n} the sizes are {x} and {y}; "
                               "they must be equal or one of them 1")
        out.append(y if x == 1 else x)
    return tuple(out)
