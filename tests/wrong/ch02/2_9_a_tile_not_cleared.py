"""a_tile's entries past the inner dimension are not set to 0: they keep the previous block's values, and an infinity there times b_tile's 0 makes nan."""
from __future__ import annotations

import numpy as np
from numba import cuda

import minikernel.kernels.gpu as mk
from minikernel.kernels.sizes import MAX_DIMS, TILE
from minikernel.strides import Shape, Storage, Strides

EXERCISE = "2.9"


def gpu_matmul(out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_strides: Strides, a_offset: int,
               b: Storage, b_strides: Strides, b_offset: int, inner: int) -> None:
    a_tile = cuda.shared.array((TILE, TILE), out.dtype)
    b_tile = cuda.shared.array((TILE, TILE), out.dtype)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    nd = len(out_shape)
    n, m = out_shape[nd - 2], out_shape[nd - 1]
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    index = cuda.local.array(MAX_DIMS, np.int64)[:nd]
    mk.to_index_into(cuda.blockIdx.z * n * m, out_shape, index)  # (*batch index, 0, 0)
    acc = 0
    for k0 in range(0, inner, TILE):
        if row < n and k0 + tx < inner:  # each thread loads one element of each tile
            index[nd - 2], index[nd - 1] = row, k0 + tx
            a_tile[ty, tx] = a[mk.index_to_position(index, a_strides, a_offset)]
        if k0 + ty < inner and col < m:
            index[nd - 2], index[nd - 1] = k0 + ty, col
            b_tile[ty, tx] = b[mk.index_to_position(index, b_strides, b_offset)]
        else:
            b_tile[ty, tx] = 0
        cuda.syncthreads()  # the tiles are complete
        for k in range(TILE):
            acc += a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()  # everyone is done with the tiles before they are overwritten
    if row < n and col < m:
        index[nd - 2], index[nd - 1] = row, col
        out[mk.index_to_position(index, out_strides, out_offset)] = acc
