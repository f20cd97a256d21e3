"""Partials go to shared memory, but thread 0 then combines them one by one instead of a tree."""
from __future__ import annotations

import numpy as np
from numba import cuda

import minikernel.kernels.gpu as mk
from minikernel.kernels.sizes import MAX_DIMS, REDUCE_THREADS

EXERCISE = "2.8"


def gpu_reduce(op, identity, out, out_shape, out_strides, out_offset, a, a_shape, a_strides, a_offset, dim):
    partial = cuda.shared.array(REDUCE_THREADS, out.dtype)
    t = cuda.threadIdx.x
    nd = len(out_shape)
    index = cuda.local.array(MAX_DIMS, np.int64)[:nd]
    mk.to_index_into(cuda.blockIdx.x, out_shape, index)
    p = mk.index_to_position(index, a_strides, a_offset)
    acc = identity
    for k in range(t, a_shape[dim], REDUCE_THREADS):
        acc = mk.combine(op, acc, a[p + k * a_strides[dim]])
    partial[t] = acc
    cuda.syncthreads()
    if t == 0:
        total = identity
        for s in range(REDUCE_THREADS):
            total = mk.combine(op, total, partial[s])
        out[mk.index_to_position(index, out_strides, out_offset)] = total
