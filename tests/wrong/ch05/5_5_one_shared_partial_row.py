"""Every task adds into one shared row of partial sums: a data race that loses updates when two tasks collide."""
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
    partial = np.zeros((2, n), dx.dtype)
    for t in prange(tasks):
        pw, pb = partial[0], partial[1]
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
            # dx = rs/n · (n·g - Σg - x̂·Σ(g·x̂)), its three coefficients in the input's precision
            cast, dest = dx.dtype.type, dx[r]
            c_g, c_sum, c_xhat = cast(rs), cast(rs / n * sum_g), cast(rs / n * sum_gx)
            for j in range(n):
                xhat = (row[j] - m) * rs
                dest[j] = c_g * grad[j] * weight[j] - c_sum - xhat * c_xhat
    for j in prange(n):
        sw = 0.0
        sb = 0.0
        sw += partial[0, j]
        sb += partial[1, j]
        dw[j] = sw
        db[j] = sb
