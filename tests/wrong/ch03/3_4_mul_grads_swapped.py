"""mul_backward gives a the gradient grad * a instead of grad * b."""
from __future__ import annotations

import minikernel.autograd.derivatives as D
import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.4"

Shape = tuple[int, ...]
Grad = Tensor | None


def mul_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    return D.sum_to_shape(F.mul(grad, a), a.shape), D.sum_to_shape(F.mul(grad, b), b.shape)
