"""max_dim_backward reshapes when keepdim is True instead of when it is False."""
from __future__ import annotations

import numpy as np

import minikernel.autograd.functions as F
from minikernel.autograd import values as V
from minikernel.tensor import Tensor

EXERCISE = "3.6"

Shape = tuple[int, ...]
Grad = Tensor | None


def max_dim_backward(grad: Tensor, indices: Tensor, shape: Shape, dim: int, keepdim: bool) -> Tensor:
    if not shape:
        return grad
    kept = tuple(1 if d == dim else n for d, n in enumerate(shape))
    if keepdim:
        grad, indices = F.reshape(grad, kept), F.reshape(indices, kept)
    positions = V.wrap(np.arange(shape[dim]).reshape([-1 if d == dim else 1 for d in range(len(shape))]))
    mask = F.eq(positions, indices)
    return F.mul(mask, grad)
