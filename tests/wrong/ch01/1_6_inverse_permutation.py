"""permute_strides applies the inverse permutation (out[dims[i]] = in[i])."""
EXERCISE = "1.6"


def permute_strides(shape, strides, dims):
    out_shape, out_strides = [0] * len(dims), [0] * len(dims)
    for i, d in enumerate(dims):
        out_shape[d], out_strides[d] = shape[i], strides[i]
    return tuple(out_shape), tuple(out_strides)
