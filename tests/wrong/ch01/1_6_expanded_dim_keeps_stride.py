"""expand_strides keeps the old stride of an expanded size-1 dimension instead of 0."""
EXERCISE = "1.6"


def expand_strides(shape, strides, new_shape):
    extra = len(new_shape) - len(shape)
    if extra < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(new_shape)}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({len(shape)})")
    out = []
    for i, target in enumerate(new_shape):
        d = i - extra
        if d < 0:
            out.append(0)
            continue
        if target not in (-1, shape[d]) and shape[d] != 1:
            raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size "
                               f"({shape[d]}) at non-singleton dimension {i}.  Target sizes: {list(new_shape)}."
                               f"  Tensor sizes: {list(shape)}")
        out.append(strides[d])
    return tuple(out)
