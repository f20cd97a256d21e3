"""The input's storage offset is dropped: a sliced view is read from the start of its storage."""
EXERCISE = "2.2"

import numpy as np
from numba import prange

import minikernel.kernels.cpu as mk
from minikernel.kernels.sizes import CPU_CHUNK


def cpu_map(op, out, out_shape, out_strides, out_offset, a, a_strides, a_offset):
    nd = len(out_shape)
    n = 1
    for size in out_shape:
        n *= size
    row, out_step, a_step = out_shape[nd - 1], out_strides[nd - 1], a_strides[nd - 1]
    for task in prange((n + CPU_CHUNK - 1) // CPU_CHUNK):
        index = np.empty(nd, np.int64)
        i = task * CPU_CHUNK
        stop = min(n, i + CPU_CHUNK)
        while i < stop:
            mk.to_index_into(i, out_shape, index)
            o = mk.index_to_position(index, out_strides, out_offset)
            p = mk.index_to_position(index, a_strides, 0)
            run = min(stop - i, row - index[nd - 1])
            for k in range(run):
                out[np.uint64(o + k * out_step)] = mk.apply_unary(op, a[np.uint64(p + k * a_step)])
            i += run
