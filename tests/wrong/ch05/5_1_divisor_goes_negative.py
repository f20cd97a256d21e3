"""The divisor n - correction is not clamped at 0: a correction larger than the count gives a negative variance."""
from __future__ import annotations

import math

import numpy as np

from minikernel.norm.stats import Dims

EXERCISE = "5.1"


def two_pass_var(x: np.ndarray, dims: Dims, correction: float, keepdim: bool) -> np.ndarray:
    n = math.prod(x.shape[d] for d in dims)
    mean = x.sum(axis=dims, keepdims=True) / n  # pass 1
    deviation = x - mean
    squares = (deviation * deviation).sum(axis=dims, keepdims=keepdim)  # pass 2: no cancellation
    return squares / (n - correction)
