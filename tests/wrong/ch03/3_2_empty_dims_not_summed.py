"""A dimension is summed only where grad's is larger than 1: an empty one (1 against 0) is left at 0."""
from __future__ import annotations

import minikernel.autograd.functions as F

EXERCISE = "3.2"


def sum_to_shape(grad, shape):
    shape = tuple(shape)
    lead = grad.ndim - len(shape)
    if lead:
        grad = F.sum(grad, tuple(range(lead)))
    dims = tuple(d for d, n in enumerate(shape) if n == 1 and grad.shape[d] > 1)
    return F.sum(grad, dims, keepdim=True) if dims else grad
