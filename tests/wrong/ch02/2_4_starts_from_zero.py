"""The fold starts from 0 instead of the identity (wrong for max of negatives)."""
from __future__ import annotations

import numpy as np
from numba import prange

import minikernel.kernels.cpu as mk
from minikernel.kernels.cpu import Scalar
from minikernel.kernels.sizes import CPU_CHUNK
from minikernel.strides import Shape, Storage, Strides

EXERCISE = "2.4"


def cpu_reduce(op: int, identity: Scalar, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_shape: Shape, a_strides: Strides, a_offset: int, dim: int) -> None:
    nd = len(out_shape)
    n = 1
    for size in out_shape:
        n *= size
    length, step = a_shape[dim], a_strides[dim]
    rows = max(1, CPU_CHUNK // max(length, 1))  # outputs per task: about CPU_CHUNK elements of work
    for task in prange((n + rows - 1) // rows):
        index = np.empty(nd, np.int64)  # one buffer per task, not per output
        for j in range(task * rows, min(n, (task + 1) * rows)):
            mk.to_index_into(j, out_shape, index)  # index[dim] is 0: the row's first element
            o = mk.index_to_position(index, out_strides, out_offset)
            p = mk.index_to_position(index, a_strides, a_offset)
            acc = identity * 0
            for k in range(length):
                acc = mk.combine(op, acc, a[np.uint64(p + k * step)])
            out[np.uint64(o)] = acc
