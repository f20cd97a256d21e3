"""Reference solutions for exercises 5.6 and 5.7 (``minikernel/norm/gpu.py``)."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from minikernel.norm.cpu import Array
from minikernel.norm.gpu import block_sum
from minikernel.norm.sizes import NORM_THREADS


def layer_norm_forward_gpu(x: Array, weight: Array, bias: Array, eps: float,
                           out: Array, mean: Array, rstd: Array) -> None:
    partial = cuda.shared.array(NORM_THREADS, np.float64)
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    n = x.shape[1]
    acc = 0.0
    for j in range(t, n, NORM_THREADS):  # pass 1: this thread's share of the row sum
        acc += x[r, j]
    m = block_sum(partial, acc) / n
    acc = 0.0
    for j in range(t, n, NORM_THREADS):  # pass 2: squared deviations from the mean
        d = x[r, j] - m
        acc += d * d
    rs = 1.0 / math.sqrt(block_sum(partial, acc) / n + eps)
    for j in range(t, n, NORM_THREADS):  # pass 3: this thread's columns of the output
        out[r, j] = (x[r, j] - m) * rs * weight[j] + bias[j]
    if t == 0:
        mean[r] = m
        rstd[r] = rs


def layer_norm_backward_gpu(dy: Array, x: Array, mean: Array, rstd: Array, weight: Array, dx: Array) -> None:
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
    for j in range(t, n, NORM_THREADS):
        xhat = (x[r, j] - m) * rs
        dx[r, j] = scale * (n * dy[r, j] * weight[j] - sum_g - xhat * sum_gx)


def layer_norm_param_grads_gpu(dy: Array, x: Array, mean: Array, rstd: Array, dw: Array, db: Array) -> None:
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    rows, n = x.shape
    if j < n:
        sw = 0.0
        sb = 0.0
        for r in range(rows):
            sw += dy[r, j] * (x[r, j] - mean[r]) * rstd[r]
            sb += dy[r, j]
        dw[j] = sw
        db[j] = sb
