"""dx forgets the xhat * sum(g * xhat) term of the derivative."""
from __future__ import annotations

import numpy as np
from numba import prange

from minikernel.norm.cpu import Array
from minikernel.norm.sizes import CPU_ROWS_PER_TASK

EXERCISE = "5.5"


def layer_norm_backward_cpu(dy: Array, x: Array, mean: Array, rstd: Array, weight: Array,
                            dx: Array, dw: Array, db: Array) -> None:
    rows, n = x.shape
    tasks = (rows + CPU_ROWS_PER_TASK - 1) // CPU_ROWS_PER_TASK
    partial = np.zeros((tasks, 2, n), dx.dtype)  # per task: no two tasks add into the same memory
    for t in prange(tasks):
        pw, pb = partial[t, 0], partial[t, 1]
        for r in range(t * CPU_ROWS_PER_TASK, min(rows, (t + 1) * CPU_ROWS_PER_TASK)):
            row, grad, m, rs = x[r], dy[r], mean[r], rstd[r]
            sum_g = 0.0
            sum_gx = 0.0
            for j in range(n):
                xhat = (row[j] - m) * rs
                g = grad[j] * weight[j]
                sum_g += g
                sum_gx += g * xhat
                pw[j] += grad[j] * xhat
                pb[j] += grad[j]
            scale = rs / n
            dest = dx[r]
            for j in range(n):
                xhat = (row[j] - m) * rs
                dest[j] = scale * (n * grad[j] * weight[j] - sum_g)
    for j in prange(n):
        sw = 0.0
        sb = 0.0
        for t in range(tasks):
            sw += partial[t, 0, j]
            sb += partial[t, 1, j]
        dw[j] = sw
        db[j] = sb
