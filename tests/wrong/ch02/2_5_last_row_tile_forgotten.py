"""The partial last tile of rows is forgotten once there is more than one (n // CPU_TILE_M tiles)."""
from __future__ import annotations

import numpy as np
from numba import prange

import minikernel.kernels.cpu as mk
from minikernel.kernels.sizes import CPU_TILE_K, CPU_TILE_M, CPU_TILE_N
from minikernel.strides import Shape, Storage, Strides

EXERCISE = "2.5"


def cpu_matmul(out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_strides: Strides, a_offset: int,
               b: Storage, b_strides: Strides, b_offset: int, inner: int) -> None:
    nd = len(out_shape)
    n, m = out_shape[nd - 2], out_shape[nd - 1]
    batches = 1
    for d in range(nd - 2):
        batches *= out_shape[d]
    tiles_n = max(1, n // CPU_TILE_M)
    tiles_m = (m + CPU_TILE_N - 1) // CPU_TILE_N
    a_step, b_step = a_strides[nd - 1], b_strides[nd - 2]  # one step along k
    for task in prange(batches * tiles_n * tiles_m):
        batch = task // (tiles_n * tiles_m)
        i0 = (task // tiles_m) % tiles_n * CPU_TILE_M
        j0 = task % tiles_m * CPU_TILE_N
        rows, cols = min(CPU_TILE_M, n - i0), min(CPU_TILE_N, m - j0)
        index = np.empty(nd, np.int64)
        mk.to_index_into(batch * n * m, out_shape, index)  # (*batch index, 0, 0)
        acc = np.zeros((CPU_TILE_M, CPU_TILE_N), out.dtype)
        a_tile = np.zeros((CPU_TILE_M, CPU_TILE_K), a.dtype)  # rows past the matrix stay 0
        b_tile = np.zeros((CPU_TILE_N, CPU_TILE_K), b.dtype)  # transposed: columns of b are rows here
        for k0 in range(0, inner, CPU_TILE_K):
            depth = min(CPU_TILE_K, inner - k0)
            for i in range(rows):
                index[nd - 2], index[nd - 1] = i0 + i, k0
                start = mk.index_to_position(index, a_strides, a_offset)
                for k in range(depth):
                    a_tile[i, k] = a[np.uint64(start + k * a_step)]
            for j in range(cols):
                index[nd - 2], index[nd - 1] = k0, j0 + j
                start = mk.index_to_position(index, b_strides, b_offset)
                for k in range(depth):
                    b_tile[j, k] = b[np.uint64(start + k * b_step)]
            for i in range(0, rows, 2):  # 2x2 outputs at a time: each loaded value is used twice
                for j in range(0, cols, 2):  # (an odd edge computes a zero row or column, never written)
                    s00, s01, s10, s11 = acc[i, j], acc[i, j + 1], acc[i + 1, j], acc[i + 1, j + 1]
                    for k in range(depth):  # contiguous in both tiles: vectorized
                        a0, a1, b0, b1 = a_tile[i, k], a_tile[i + 1, k], b_tile[j, k], b_tile[j + 1, k]
                        s00 += a0 * b0
                        s01 += a0 * b1
                        s10 += a1 * b0
                        s11 += a1 * b1
                    acc[i, j], acc[i, j + 1], acc[i + 1, j], acc[i + 1, j + 1] = s00, s01, s10, s11
        for i in range(rows):
            for j in range(cols):
                index[nd - 2], index[nd - 1] = i0 + i, j0 + j
                out[np.uint64(mk.index_to_position(index, out_strides, out_offset))] = acc[i, j]
