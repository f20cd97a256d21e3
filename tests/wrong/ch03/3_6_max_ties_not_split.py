"""max_backward gives every tied maximum the whole gradient instead of an even share."""
from __future__ import annotations

import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.6"

Shape = tuple[int, ...]
Grad = Tensor | None


def max_backward(grad: Tensor, x: Tensor, result: Tensor) -> Tensor:
    mask = F.eq(x, result)
    return F.mul(grad, mask)
