"""Reference solutions for exercises 2.6–2.9 (``minikernel/kernels/gpu.py``).

Helpers are called through ``mk`` (``minikernel.kernels.gpu``), where they are the
``cuda.jit(device=True)`` versions of whichever index helpers are active.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

import minikernel.kernels.gpu as mk
from minikernel.kernels.gpu import Scalar
from minikernel.kernels.sizes import MAX_DIMS, REDUCE_THREADS, TILE
from minikernel.strides import Shape, Storage, Strides


def gpu_map(op: int, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
            a: Storage, a_strides: Strides, a_offset: int) -> None:
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    nd = len(out_shape)
    n = 1
    for d in range(nd):
        n *= out_shape[d]
    if i < n:
        index = cuda.local.array(MAX_DIMS, np.int64)[:nd]
        mk.to_index_into(i, out_shape, index)
        value = a[mk.index_to_position(index, a_strides, a_offset)]
        out[mk.index_to_position(index, out_strides, out_offset)] = mk.apply_unary(op, value)


def gpu_zip(op: int, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
            a: Storage, a_strides: Strides, a_offset: int,
            b: Storage, b_strides: Strides, b_offset: int) -> None:
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    nd = len(out_shape)
    n = 1
    for d in range(nd):
        n *= out_shape[d]
    if i < n:
        index = cuda.local.array(MAX_DIMS, np.int64)[:nd]
        mk.to_index_into(i, out_shape, index)
        x = a[mk.index_to_position(index, a_strides, a_offset)]
        y = b[mk.index_to_position(index, b_strides, b_offset)]
        out[mk.index_to_position(index, out_strides, out_offset)] = mk.apply_binary(op, x, y)


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
            partial[t] = mk.combine(op, partial[t], partial[t + s])
        cuda.syncthreads()
        s //= 2
    if t == 0:  # 4.
        out[mk.index_to_position(index, out_strides, out_offset)] = partial[0]


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
        else:
            a_tile[ty, tx] = 0
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
