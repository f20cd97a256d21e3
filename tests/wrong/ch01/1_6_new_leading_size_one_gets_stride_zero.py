"""expand_strides gives every new leading dimension stride 0, also one of size 1 (torch gives it the contiguous stride)."""
EXERCISE = "1.6"


def expand_strides(shape, strides, new_shape):
    n, extra = len(new_shape), len(new_shape) - len(shape)
    if extra < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({n}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({len(shape)})")
    out = [0] * n
    for i in range(n - 1, -1, -1):
        d = i - extra
        target = new_shape[i]
        if d < 0:
            if target == -1:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            out[i] = 0
            continue
        size = shape[d]
        if target == -1 or target == size:
            out[i] = strides[d]
        elif size == 1:
            out[i] = 0
        else:
            raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size "
                               f"({size}) at non-singleton dimension {i}.  Target sizes: {list(new_shape)}.  "
                               f"Tensor sizes: {list(shape)}")
    return tuple(out)
