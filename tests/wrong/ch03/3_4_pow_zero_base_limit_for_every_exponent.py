"""pow_backward treats a zero base as giving a zero exponent gradient for every exponent:
right for y >= 0 (0**y is 0 or 1 there), but for y < 0 torch's x**y * log(x) is -inf."""
from __future__ import annotations

from typing import Union

import minikernel.autograd.derivatives as D
import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.4"

Number = Union[int, float]
Grad = Tensor | None


def pow_backward(grad: Tensor, base: Tensor, exponent: Union[Tensor, Number], result: Tensor) -> tuple[Tensor, Grad]:
    if not isinstance(exponent, Tensor):
        if exponent == 0:
            return F.zeros_like(base), None
        grad_base = F.mul(grad, F.mul(exponent, F.pow(base, exponent - 1)))
        return D.sum_to_shape(grad_base, base.shape), None
    grad_base = F.where(F.eq(exponent, 0), 0.0, F.mul(grad, F.mul(exponent, F.pow(base, F.sub(exponent, 1)))))
    limit = F.eq(base, 0)
    grad_exp = F.where(limit, 0.0, F.mul(grad, F.mul(result, F.log(base))))
    return D.sum_to_shape(grad_base, base.shape), D.sum_to_shape(grad_exp, exponent.shape)
