"""One pass, E[x^2] - E[x]^2: catastrophic cancellation for data far from 0."""
from __future__ import annotations

import math

import numpy as np

from minikernel.norm.stats import Dims

EXERCISE = "5.1"


def two_pass_var(x: np.ndarray, dims: Dims, correction: float, keepdim: bool) -> np.ndarray:
    n = math.prod(x.shape[d] for d in dims)
    mean = x.sum(axis=dims, keepdims=True) / n  # pass 1
    squares = (x * x).sum(axis=dims, keepdims=keepdim) - n * (mean * mean).sum(axis=dims, keepdims=keepdim)
    return squares / max(0, n - correction)
