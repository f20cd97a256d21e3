"""The dx pass runs n // NORM_THREADS + 1 steps per thread and clamps the column to n - 1 instead of skipping past the end: the values are right, but at a row length that is a multiple of the block some threads read the last column once more than their share."""
from __future__ import annotations

import numpy as np
from numba import cuda

from minikernel.norm.gpu import block_sum
from minikernel.norm.sizes import NORM_THREADS

EXERCISE = "5.7"


def layer_norm_backward_gpu(dy, x, mean, rstd, weight, dx):
    partial = cuda.shared.array(NORM_THREADS, np.float64)
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    n = x.shape[1]
    m, rs = mean[r], rstd[r]
    acc_g = 0.0
    acc_gx = 0.0
    for j in range(t, n, NORM_THREADS):
        g = dy[r, j] * weight[j]
        acc_g += g
        acc_gx += g * (x[r, j] - m) * rs
    sum_g = block_sum(partial, acc_g)
    sum_gx = block_sum(partial, acc_gx)
    scale = rs / n
    for k in range(n // NORM_THREADS + 1):
        j = min(t + k * NORM_THREADS, n - 1)  # past the end: the last column again (same value)
        xhat = (x[r, j] - m) * rs
        dx[r, j] = scale * (n * dy[r, j] * weight[j] - sum_g - xhat * sum_gx)
