"""div_backward loses the minus sign of d(a/b)/db."""
from __future__ import annotations

import minikernel.autograd.derivatives as D
import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.4"

Shape = tuple[int, ...]
Grad = Tensor | None


def div_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    grad_a = F.div(grad, b)
    grad_b = F.div(F.mul(grad, a), F.mul(b, b))
    return D.sum_to_shape(grad_a, a.shape), D.sum_to_shape(grad_b, b.shape)
