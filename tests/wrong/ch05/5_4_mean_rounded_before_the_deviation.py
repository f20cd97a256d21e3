"""The mean is rounded to the input's dtype before the deviation of pass 3: a small spread on a large offset is lost in float32."""
from __future__ import annotations

import numpy as np
from numba import prange

from minikernel.norm.cpu import Array
from minikernel.norm.sizes import CPU_ROWS_PER_TASK

EXERCISE = "5.4"


def layer_norm_forward_cpu(x: Array, weight: Array, bias: Array, eps: float,
                           out: Array, mean: Array, rstd: Array) -> None:
    rows, n = x.shape
    for r in prange(rows):
        row, dest = x[r], out[r]
        total = 0.0
        for j in range(n):  # pass 1: the mean
            total += row[j]
        m = total / n
        squares = 0.0
        for j in range(n):  # pass 2: deviations from it (no cancellation)
            d = row[j] - m
            squares += d * d
        rs = 1.0 / np.sqrt(squares / n + eps)
        # Pass 3: the deviation in float64 (a float32 mean would round away a small spread
        # on a large offset), the rest in the input's precision, as torch computes it:
        # float32 fits twice as many values per vector instruction.
        cast = row.dtype.type
        rsf = cast(rs)
        for j in range(n):  # pass 3: normalize, scale, shift
            dest[j] = (row[j] - cast(m)) * rsf * weight[j] + bias[j]
        mean[r] = m
        rstd[r] = rs


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
            # dx = rs/n · (n·g - Σg - x̂·Σ(g·x̂)), its three coefficients in the input's precision
            cast, dest = dx.dtype.type, dx[r]
            c_g, c_sum, c_xhat = cast(rs), cast(rs / n * sum_g), cast(rs / n * sum_gx)
            for j in range(n):
                xhat = (row[j] - m) * rs
                dest[j] = c_g * grad[j] * weight[j] - c_sum - xhat * c_xhat
    for j in prange(n):
        sw = 0.0
        sb = 0.0
        for t in range(tasks):
            sw += partial[t, 0, j]
            sb += partial[t, 1, j]
        dw[j] = sw
        db[j] = sb
