"""Two columns per step (as a tuned kernel loads them), for pairs p < n // 2 only: a row of
odd length loses its last column in the sum, the variance and the output."""
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
    m = block_sum(partial, acc) / n
    acc = 0.0
    for p in range(t, n // 2, NORM_THREADS):
        d0, d1 = x[r, 2 * p] - m, x[r, 2 * p + 1] - m
        acc += d0 * d0 + d1 * d1
    rs = 1.0 / math.sqrt(block_sum(partial, acc) / n + eps)
    for p in range(t, n // 2, NORM_THREADS):
        for j in (2 * p, 2 * p + 1):
            out[r, j] = (x[r, j] - m) * rs * weight[j] + bias[j]
    if t == 0:
        mean[r] = m
        rstd[r] = rs
