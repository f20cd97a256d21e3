"""eps added to the standard deviation instead of the variance."""
from __future__ import annotations

import numpy as np
from numba import prange

from minikernel.norm.cpu import Array

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
        rs = 1.0 / (np.sqrt(squares / n) + eps)
        for j in range(n):  # pass 3: normalize, scale, shift
            dest[j] = (row[j] - m) * rs * weight[j] + bias[j]
        mean[r] = m
        rstd[r] = rs
