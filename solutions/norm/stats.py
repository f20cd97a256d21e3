"""Reference solution for exercise 5.1 (``minikernel/norm/stats.py``)."""
from __future__ import annotations

import math

import numpy as np

from minikernel.norm.stats import Dims


def two_pass_var(x: np.ndarray, dims: Dims, correction: float, keepdim: bool) -> np.ndarray:
    n = math.prod(x.shape[d] for d in dims)
    mean = x.sum(axis=dims, keepdims=True) / n  # pass 1
    deviation = x - mean
    squares = (deviation * deviation).sum(axis=dims, keepdims=keepdim)  # pass 2: no cancellation
    return squares / max(0, n - correction)
