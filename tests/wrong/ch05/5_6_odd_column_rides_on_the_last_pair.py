"""Two columns per step, the odd last column handled by the thread of the last pair: a row of one column has no pair, so its only value is never read."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from minikernel.norm.cpu import Array
from minikernel.norm.gpu import block_sum
from minikernel.norm.sizes import NORM_THREADS

EXERCISE = "5.6"


def layer_norm_forward_gpu(x: Array, weight: Array, bias: Array, eps: float,
                           out: Array, mean: Array, rstd: Array) -> None:
    partial = cuda.shared.array(NORM_THREADS, np.float64)
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    n = x.shape[1]
    acc = 0.0
    for p in range(t, n // 2, NORM_THREADS):  # columns 2p and 2p + 1
        acc += x[r, 2 * p] + x[r, 2 * p + 1]
        if 2 * p + 3 == n:  # the last pair, followed by an odd column
            acc += x[r, n - 1]
    m = block_sum(partial, acc) / n
    acc = 0.0
    for p in range(t, n // 2, NORM_THREADS):
        d0, d1 = x[r, 2 * p] - m, x[r, 2 * p + 1] - m
        acc += d0 * d0 + d1 * d1
        if 2 * p + 3 == n:
            d = x[r, n - 1] - m
            acc += d * d
    rs = 1.0 / math.sqrt(block_sum(partial, acc) / n + eps)
    for p in range(t, n // 2, NORM_THREADS):
        for j in (2 * p, 2 * p + 1):
            out[r, j] = (x[r, j] - m) * rs * weight[j] + bias[j]
        if 2 * p + 3 == n:
            out[r, n - 1] = (x[r, n - 1] - m) * rs * weight[n - 1] + bias[n - 1]
    if t == 0:
        mean[r] = m
        rstd[r] = rs
