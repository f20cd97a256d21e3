"""Broadcast leading dimensions are never summed away."""
from __future__ import annotations

from collections.abc import Sequence

import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.2"

Shape = tuple[int, ...]
Grad = Tensor | None


def sum_to_shape(grad: Tensor, shape: Sequence[int]) -> Tensor:
    shape = tuple(shape)
    dims = tuple(d for d, n in enumerate(shape) if n == 1 and grad.shape[d] != 1)
    return F.sum(grad, dims, keepdim=True) if dims else grad
