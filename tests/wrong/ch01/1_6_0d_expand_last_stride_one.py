"""A new leading dimension with nothing after it (the last one of an expanded 0-d tensor) gets the contiguous layout's stride 1, where torch gives 0 even at size 1."""
EXERCISE = "1.6"


def expand_strides(shape, strides, new_shape):
    n, extra = len(new_shape), len(new_shape) - len(shape)
    if extra < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({n}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({len(shape)})")
    out = [0] * n
    below = 1  # size * stride of the dimension after the current one; 1 past the last
    for i in range(n - 1, -1, -1):
        d = i - extra
        size = shape[d] if d >= 0 else 1
        stride = strides[d] if d >= 0 else below
        target = new_shape[i]
        if target == -1:
            if d < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            target = size
        if size != target:
            if size != 1:
                raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing "
                                   f"size ({size}) at non-singleton dimension {i}")
            size, stride = target, 0
        out[i] = stride
        below = size * stride
    return tuple(out)
