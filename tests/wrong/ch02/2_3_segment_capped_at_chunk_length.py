"""A row segment is capped at CPU_CHUNK elements instead of the task's end: a task runs on into the next task's ordinals, which are then processed twice (in place, x.add_(y) adds y twice)."""
from __future__ import annotations

import numpy as np
from numba import prange

import minikernel.kernels.cpu as mk
from minikernel.kernels.sizes import CPU_CHUNK
from minikernel.strides import Shape, Storage, Strides

EXERCISE = "2.3"


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
            run = min(CPU_CHUNK, row - index[nd - 1])
            for k in range(run):
                out[np.uint64(o + k * out_step)] = mk.apply_binary(
                    op, a[np.uint64(p + k * a_step)], b[np.uint64(q + k * b_step)])
            i += run
