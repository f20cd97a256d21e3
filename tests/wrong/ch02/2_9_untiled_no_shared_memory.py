"""No tiling: each thread reads its whole row of a and column of b from global memory."""
from __future__ import annotations

import numpy as np
from numba import cuda

import minikernel.kernels.gpu as mk
from minikernel.kernels.sizes import MAX_DIMS, TILE

EXERCISE = "2.9"


def gpu_matmul(out, out_shape, out_strides, out_offset, a, a_strides, a_offset, b, b_strides, b_offset, inner):
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    nd = len(out_shape)
    n, m = out_shape[nd - 2], out_shape[nd - 1]
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    index = cuda.local.array(MAX_DIMS, np.int64)[:nd]
    mk.to_index_into(cuda.blockIdx.z * n * m, out_shape, index)
    if row < n and col < m:
        acc = 0
        for k in range(inner):
            index[nd - 2], index[nd - 1] = row, k
            x = a[mk.index_to_position(index, a_strides, a_offset)]
            index[nd - 2], index[nd - 1] = k, col
            acc += x * b[mk.index_to_position(index, b_strides, b_offset)]
        index[nd - 2], index[nd - 1] = row, col
        out[mk.index_to_position(index, out_strides, out_offset)] = acc
