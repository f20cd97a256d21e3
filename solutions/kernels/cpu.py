"""Reference solutions for exercises 2.2–2.5 (``minikernel/kernels/cpu.py``).

Helpers are called through ``mk`` (``minikernel.kernels.cpu``), where they are the
numba-compiled versions of whichever index helpers are active (yours or references).
"""
from __future__ import annotations

import numpy as np
from numba import prange

import minikernel.kernels.cpu as mk
from minikernel.kernels.cpu import Scalar
from minikernel.kernels.cpu_tiles import REFERENCE_TILES
from minikernel.kernels.sizes import CPU_CHUNK, CPU_REDUCE_STRIP
from minikernel.strides import Shape, Storage, Strides

#: The matmul's tile sizes, chosen for this machine (numba compiles them in as constants).
TILE_M, TILE_N, TILE_K = REFERENCE_TILES.m, REFERENCE_TILES.n, REFERENCE_TILES.k
MIN_TASKS = REFERENCE_TILES.tasks
#: Elements of work per task of the reduce's walk along contiguous rows: with 4096-element
#: rows, 32 rows, read as four streams of 8 rows (128 KiB of float32) each.
ROW_TASK = 8 * CPU_CHUNK


def cpu_map(op: int, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
            a: Storage, a_strides: Strides, a_offset: int) -> None:
    nd = len(out_shape)
    n = 1
    for size in out_shape:
        n *= size
    row, out_step, a_step = out_shape[nd - 1], out_strides[nd - 1], a_strides[nd - 1]
    for task in prange((n + CPU_CHUNK - 1) // CPU_CHUNK):
        index = np.empty(nd, np.int64)
        i = task * CPU_CHUNK
        stop = min(n, i + CPU_CHUNK)
        while i < stop:  # one row segment per pass
            mk.to_index_into(i, out_shape, index)
            o = mk.index_to_position(index, out_strides, out_offset)
            p = mk.index_to_position(index, a_strides, a_offset)
            run = min(stop - i, row - index[nd - 1])
            for k in range(run):
                out[np.uint64(o + k * out_step)] = mk.apply_unary(op, a[np.uint64(p + k * a_step)])
            i += run


def cpu_zip(op: int, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
            a: Storage, a_strides: Strides, a_offset: int,
            b: Storage, b_strides: Strides, b_offset: int) -> None:
    nd = len(out_shape)
    n = 1
    for size in out_shape:
        n *= size
    row, out_step = out_shape[nd - 1], out_strides[nd - 1]
    a_step, b_step = a_strides[nd - 1], b_strides[nd - 1]
    for task in prange((n + CPU_CHUNK - 1) // CPU_CHUNK):
        index = np.empty(nd, np.int64)
        i = task * CPU_CHUNK
        stop = min(n, i + CPU_CHUNK)
        while i < stop:
            mk.to_index_into(i, out_shape, index)
            o = mk.index_to_position(index, out_strides, out_offset)
            p = mk.index_to_position(index, a_strides, a_offset)
            q = mk.index_to_position(index, b_strides, b_offset)
            run = min(stop - i, row - index[nd - 1])
            for k in range(run):
                out[np.uint64(o + k * out_step)] = mk.apply_binary(
                    op, a[np.uint64(p + k * a_step)], b[np.uint64(q + k * b_step)])
            i += run


def cpu_reduce(op: int, identity: Scalar, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_shape: Shape, a_strides: Strides, a_offset: int, dim: int) -> None:
    nd = len(out_shape)
    n = 1
    for size in out_shape:
        n *= size
    if n == 0:
        return
    length, step = a_shape[dim], a_strides[dim]
    # Which way to walk a. Along the reduced dim when it is the closest-packed (one
    # output's row of a is contiguous); otherwise along the closest-packed kept dim v:
    # a strip of outputs side by side, each step k adds a contiguous slice of a to them
    # (how torch reduces over an outer dim). Reading a at stride |step| instead would
    # use one float of each 64-byte cache line it loads.
    v, v_stride = -1, abs(step)
    for d in range(nd):
        if d != dim and out_shape[d] > 1 and abs(a_strides[d]) < v_stride:
            v, v_stride = d, abs(a_strides[d])
    if v < 0:
        # Outputs per task: about ROW_TASK elements of work, and 8 tasks at least when there are 8 outputs.
        rows = max(1, min(ROW_TASK // max(length, 1), n // 8))
        for task in prange((n + rows - 1) // rows):
            index = np.empty(nd, np.int64)  # one buffer per task, not per output
            j0, j_end = task * rows, min(n, (task + 1) * rows)
            # Contiguous rows, four side by side, one from each quarter of the task's rows:
            # four streams of memory in flight, each reading on where it stopped (rows j..j+3
            # side by side would start four new streams every four rows, and the hardware
            # prefetcher learns each stream anew: 12-17% slower for 4096 x 4096 on one core
            # of a 2-core AMD EPYC, up to 10% on two).
            quarter = (j_end - j0) // 4 if step == 1 else 0
            for i in range(quarter):
                mk.to_index_into(j0 + i, out_shape, index)
                p0 = mk.index_to_position(index, a_strides, a_offset)
                o0 = mk.index_to_position(index, out_strides, out_offset)
                mk.to_index_into(j0 + quarter + i, out_shape, index)
                p1 = mk.index_to_position(index, a_strides, a_offset)
                o1 = mk.index_to_position(index, out_strides, out_offset)
                mk.to_index_into(j0 + 2 * quarter + i, out_shape, index)
                p2 = mk.index_to_position(index, a_strides, a_offset)
                o2 = mk.index_to_position(index, out_strides, out_offset)
                mk.to_index_into(j0 + 3 * quarter + i, out_shape, index)
                p3 = mk.index_to_position(index, a_strides, a_offset)
                o3 = mk.index_to_position(index, out_strides, out_offset)
                s0 = s1 = s2 = s3 = identity
                for k in range(length):
                    s0 = mk.combine(op, s0, a[np.uint64(p0 + k)])
                    s1 = mk.combine(op, s1, a[np.uint64(p1 + k)])
                    s2 = mk.combine(op, s2, a[np.uint64(p2 + k)])
                    s3 = mk.combine(op, s3, a[np.uint64(p3 + k)])
                out[np.uint64(o0)], out[np.uint64(o1)], out[np.uint64(o2)], out[np.uint64(o3)] = s0, s1, s2, s3
            rest = j0 + 4 * quarter
            for j in range(rest, j_end):  # the rest one at a time
                mk.to_index_into(j, out_shape, index)  # index[dim] is 0: the row's first element
                o = mk.index_to_position(index, out_strides, out_offset)
                p = mk.index_to_position(index, a_strides, a_offset)
                acc = identity
                for k in range(length):
                    acc = mk.combine(op, acc, a[np.uint64(p + k * step)])
                out[np.uint64(o)] = acc
        return
    row = out_shape[v]
    width = min(row, CPU_REDUCE_STRIP)
    strips = (row + width - 1) // width
    o_step, a_step = out_strides[v], a_strides[v]
    for task in prange(n // row * strips):
        index = np.empty(nd, np.int64)
        acc = np.empty(width, out.dtype)
        rest, j0 = task // strips, task % strips * width
        for d in range(nd - 1, -1, -1):  # the strip's first output: every dim but v from `rest`
            if d != v:
                index[d] = rest % out_shape[d]
                rest //= out_shape[d]
        index[v] = j0
        o = mk.index_to_position(index, out_strides, out_offset)
        p = mk.index_to_position(index, a_strides, a_offset)
        cols = min(width, row - j0)
        for t in range(cols):
            acc[t] = identity
        for k in range(length):
            base = p + k * step
            if a_step == 1:  # the common case, written so the compiler vectorizes it
                for t in range(cols):
                    acc[t] = mk.combine(op, acc[t], a[np.uint64(base + t)])
            else:
                for t in range(cols):
                    acc[t] = mk.combine(op, acc[t], a[np.uint64(base + t * a_step)])
        for t in range(cols):
            out[np.uint64(o + t * o_step)] = acc[t]


def cpu_matmul(out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_strides: Strides, a_offset: int,
               b: Storage, b_strides: Strides, b_offset: int, inner: int) -> None:
    """Blocked matmul: one tile of ``out`` (up to ``TILE_M x TILE_N``) per task.

    The tile sizes are this machine's (``kernels/cpu_tiles.py``, from its cache
    sizes), not the exercise's ``CPU_TILE_*``; a product with fewer tiles than
    ``MIN_TASKS`` (the cores) gets narrower ones, so every thread has work.

    For each block of ``TILE_K`` steps along ``inner``: copy the tile's rows of ``a``
    into ``a_tile[i, k]`` and its columns of ``b`` into ``b_tile[j, k]`` (transposed),
    so that both operands of every dot product are contiguous along ``k``; then, 4
    rows by 4 columns at a time, add the block's 16 dot products
    ``sum_k a_tile[i + r, k] * b_tile[j + c, k]`` to ``acc``. ``acc`` is written to
    ``out`` once all blocks of ``inner`` are summed.
    """
    nd = len(out_shape)
    n, m = out_shape[nd - 2], out_shape[nd - 1]
    batches = 1
    for d in range(nd - 2):
        batches *= out_shape[d]
    tile_m, tile_n = TILE_M, TILE_N
    while (batches * ((n + tile_m - 1) // tile_m) * ((m + tile_n - 1) // tile_n) < MIN_TASKS
           and max(tile_m, tile_n) > 4):
        if tile_m > tile_n:  # halve the longer side (columns first: copying b is the slower copy)
            tile_m = (tile_m // 2 + 3) // 4 * 4
        else:
            tile_n = (tile_n // 2 + 3) // 4 * 4
    tiles_n = (n + tile_m - 1) // tile_m
    tiles_m = (m + tile_n - 1) // tile_n
    depth_max = min(TILE_K, inner)
    a_step, b_step = a_strides[nd - 1], b_strides[nd - 2]  # one step along k
    b_col_step = b_strides[nd - 1]  # one step along a row of b
    out_step = out_strides[nd - 1]  # one step along a row of out
    for task in prange(batches * tiles_n * tiles_m):
        batch = task // (tiles_n * tiles_m)
        i0 = (task // tiles_m) % tiles_n * tile_m
        j0 = task % tiles_m * tile_n
        rows, cols = min(tile_m, n - i0), min(tile_n, m - j0)
        index = np.empty(nd, np.int64)
        mk.to_index_into(batch * n * m, out_shape, index)  # (*batch index, 0, 0)
        # Rounded up to whole 4 x 4 blocks. The copies below fill the tiles' first rows
        # and cols; the rows past the matrix are zeroed here, once (not the whole tiles).
        acc = np.zeros(((rows + 3) // 4 * 4, (cols + 3) // 4 * 4), out.dtype)
        a_tile = np.empty((acc.shape[0], depth_max), a.dtype)
        b_tile = np.empty((acc.shape[1], depth_max), b.dtype)  # transposed: columns of b are rows here
        a_tile[rows:, :] = 0
        b_tile[cols:, :] = 0
        for k0 in range(0, inner, TILE_K):
            depth = min(TILE_K, inner - k0)
            # One element copied costs more than a multiply-add, so the copies read
            # memory in order (a vectorized copy where the stride is 1): rows of a;
            # b by rows when they are closer-packed than its columns (row-major b),
            # writing each value into its column of b_tile.
            for i in range(rows):
                index[nd - 2], index[nd - 1] = i0 + i, k0
                start = mk.index_to_position(index, a_strides, a_offset)
                if a_step == 1:
                    for k in range(depth):
                        a_tile[i, k] = a[np.uint64(start + k)]
                else:
                    for k in range(depth):
                        a_tile[i, k] = a[np.uint64(start + k * a_step)]
            if abs(b_col_step) < abs(b_step):
                # Transposed 8 steps of k at a time: each column of b_tile gets 32
                # contiguous bytes per pass, while the 8 rows of b being read stay in
                # cache (8 lines, even when the rows are 4 KiB apart and share one
                # cache set). Step by step along k instead, the writes land TILE_K
                # floats apart, in a few cache sets that keep evicting each other.
                for kb in range(0, depth, 8):
                    width = min(8, depth - kb)
                    index[nd - 2], index[nd - 1] = k0 + kb, j0
                    start = mk.index_to_position(index, b_strides, b_offset)
                    for j in range(cols):
                        p = start + j * b_col_step
                        for k in range(width):
                            b_tile[j, kb + k] = b[np.uint64(p + k * b_step)]
            else:
                for j in range(cols):
                    index[nd - 2], index[nd - 1] = k0, j0 + j
                    start = mk.index_to_position(index, b_strides, b_offset)
                    if b_step == 1:
                        for k in range(depth):
                            b_tile[j, k] = b[np.uint64(start + k)]
                    else:
                        for k in range(depth):
                            b_tile[j, k] = b[np.uint64(start + k * b_step)]
            # 4x4 outputs at a time. Their 16 sums are local variables, which the
            # compiler keeps in vector registers; each step of k loads 8 values and
            # uses each 4 times, so the multiply-adds, not the loads, set the pace.
            # The sums start from 0 in each block (vector registers of zeros) and are
            # added to acc after it. (An edge block computes zero rows or columns,
            # never written to out.)
            for i in range(0, rows, 4):
                for j in range(0, cols, 4):
                    s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = acc.dtype.type(0)
                    s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = acc.dtype.type(0)
                    for k in range(depth):  # contiguous in both tiles: vectorized along k
                        a0, a1, a2, a3 = a_tile[i, k], a_tile[i + 1, k], a_tile[i + 2, k], a_tile[i + 3, k]
                        b0, b1, b2, b3 = b_tile[j, k], b_tile[j + 1, k], b_tile[j + 2, k], b_tile[j + 3, k]
                        s00 += a0 * b0; s01 += a0 * b1; s02 += a0 * b2; s03 += a0 * b3  # noqa: E702
                        s10 += a1 * b0; s11 += a1 * b1; s12 += a1 * b2; s13 += a1 * b3  # noqa: E702
                        s20 += a2 * b0; s21 += a2 * b1; s22 += a2 * b2; s23 += a2 * b3  # noqa: E702
                        s30 += a3 * b0; s31 += a3 * b1; s32 += a3 * b2; s33 += a3 * b3  # noqa: E702
                    acc[i, j] += s00; acc[i, j + 1] += s01; acc[i, j + 2] += s02; acc[i, j + 3] += s03  # noqa: E702
                    acc[i + 1, j] += s10; acc[i + 1, j + 1] += s11  # noqa: E702
                    acc[i + 1, j + 2] += s12; acc[i + 1, j + 3] += s13  # noqa: E702
                    acc[i + 2, j] += s20; acc[i + 2, j + 1] += s21  # noqa: E702
                    acc[i + 2, j + 2] += s22; acc[i + 2, j + 3] += s23  # noqa: E702
                    acc[i + 3, j] += s30; acc[i + 3, j + 1] += s31  # noqa: E702
                    acc[i + 3, j + 2] += s32; acc[i + 3, j + 3] += s33  # noqa: E702
        for i in range(rows):  # one index_to_position per row, not per element
            index[nd - 2], index[nd - 1] = i0 + i, j0
            start = mk.index_to_position(index, out_strides, out_offset)
            for j in range(cols):
                out[np.uint64(start + j * out_step)] = acc[i, j]
