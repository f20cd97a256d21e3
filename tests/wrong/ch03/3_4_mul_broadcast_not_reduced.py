"""mul_backward forgets to sum the gradients back to the inputs' broadcast shapes."""
from __future__ import annotations

import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.4"

Shape = tuple[int, ...]
Grad = Tensor | None


def mul_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    return F.mul(grad, b), F.mul(grad, a)
