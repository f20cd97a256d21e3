"""The fold starts from the row's first element instead of the identity: an empty reduced dimension (K = 0) reads a[j, 0], which does not exist, instead of writing the identity."""
EXERCISE = "2.4"

import numpy as np
from numba import prange

import minikernel.kernels.cpu as mk


def cpu_reduce(op, identity, out, out_shape, out_strides, out_offset, a, a_shape, a_strides, a_offset, dim):
    nd = len(out_shape)
    n = 1
    for size in out_shape:
        n *= size
    length, step = a_shape[dim], a_strides[dim]
    for j in prange(n):
        index = np.empty(nd, np.int64)
        mk.to_index_into(j, out_shape, index)
        o = mk.index_to_position(index, out_strides, out_offset)
        p = mk.index_to_position(index, a_strides, a_offset)
        acc = a[np.uint64(p)]
        for k in range(1, length):
            acc = mk.combine(op, acc, a[np.uint64(p + k * step)])
        out[np.uint64(o)] = acc
