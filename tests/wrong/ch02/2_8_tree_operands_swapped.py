"""The tree combines partial[t + s] first: of equal values the later thread's wins, so amax over 0.0 and -0.0 returns the sign of a later element, not the first."""
from __future__ import annotations

import numpy as np
from numba import cuda

import minikernel.kernels.gpu as mk
from minikernel.kernels.gpu import Scalar
from minikernel.kernels.sizes import MAX_DIMS, REDUCE_THREADS
from minikernel.strides import Shape, Storage, Strides

EXERCISE = "2.8"


def gpu_reduce(op: int, identity: Scalar, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_shape: Shape, a_strides: Strides, a_offset: int, dim: int) -> None:
    partial = cuda.shared.array(REDUCE_THREADS, out.dtype)
    t = cuda.threadIdx.x
    nd = len(out_shape)
    index = cuda.local.array(MAX_DIMS, np.int64)[:nd]
    mk.to_index_into(cuda.blockIdx.x, out_shape, index)  # index[dim] is 0: the row's first element
    p = mk.index_to_position(index, a_strides, a_offset)
    step = a_strides[dim]
    acc = identity
    for k in range(t, a_shape[dim], REDUCE_THREADS):  # 1. strided partial fold
        acc = mk.combine(op, acc, a[p + k * step])
    partial[t] = acc  # 2.
    cuda.syncthreads()
    s = REDUCE_THREADS // 2
    while s > 0:  # 3. tree: every thread reaches every syncthreads
        if t < s:
            partial[t] = mk.combine(op, partial[t + s], partial[t])
        cuda.syncthreads()
        s //= 2
    if t == 0:  # 4.
        out[mk.index_to_position(index, out_strides, out_offset)] = partial[0]
