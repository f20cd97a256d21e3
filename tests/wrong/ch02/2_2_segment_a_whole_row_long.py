"""A row segment is a whole row long even when the task starts inside a row: from there it steps past the row's end, which only a non-contiguous input shows."""
from __future__ import annotations

import numpy as np
from numba import prange

import minikernel.kernels.cpu as mk
from minikernel.kernels.sizes import CPU_CHUNK
from minikernel.strides import Shape, Storage, Strides

EXERCISE = "2.2"


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
            run = min(stop - i, row)
            for k in range(run):
                out[np.uint64(o + k * out_step)] = mk.apply_unary(op, a[np.uint64(p + k * a_step)])
            i += run
