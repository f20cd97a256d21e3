"""No sharing: thread 0 of each block computes the whole row by itself."""
from __future__ import annotations

import math

from numba import cuda

EXERCISE = "5.6"


def layer_norm_forward_gpu(x, weight, bias, eps, out, mean, rstd):
    r = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        n = x.shape[1]
        total = 0.0
        for j in range(n):
            total += x[r, j]
        m = total / n
        squares = 0.0
        for j in range(n):
            squares += (x[r, j] - m) * (x[r, j] - m)
        rs = 1.0 / math.sqrt(squares / n + eps)
        for j in range(n):
            out[r, j] = (x[r, j] - m) * rs * weight[j] + bias[j]
        mean[r] = m
        rstd[r] = rs
