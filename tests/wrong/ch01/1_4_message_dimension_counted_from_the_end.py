"""The broadcast error names the dimension by its step in a walk from the last dimension (0 = the last one), a number that reads as another dimension."""
EXERCISE = "1.4"


def broadcast_shape(a, b):
    out = []
    for step in range(max(len(a), len(b))):
        x = a[len(a) - 1 - step] if step < len(a) else 1
        y = b[len(b) - 1 - step] if step < len(b) else 1
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"shapes {tuple(a)} and {tuple(b)} cannot be broadcast: at dimension "
                               f"{step} the sizes are {x} and {y}; they must be equal or one of them 1")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))
