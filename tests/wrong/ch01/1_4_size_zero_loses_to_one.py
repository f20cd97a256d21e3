"""Takes the larger size, so 0 against 1 broadcasts to 1 instead of 0."""
EXERCISE = "1.4"


def broadcast_shape(a, b):
    n = max(len(a), len(b))
    a_, b_ = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for d, (x, y) in enumerate(zip(a_, b_)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"shapes {tuple(a)} and {tuple(b)} cannot be broadcast: at dimension "
                               f"{d - n} the sizes are {x} and {y}; they must be equal or one of them 1")
        out.append(max(x, y))
    return tuple(out)
