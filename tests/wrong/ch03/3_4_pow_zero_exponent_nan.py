"""pow_backward has no special case for exponent 0, giving 0 * base ** -1 (nan at base 0)."""
from __future__ import annotations

from numbers import Number

import minikernel.autograd.derivatives as D
import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.4"

Shape = tuple[int, ...]
Grad = Tensor | None


def pow_backward(grad: Tensor, base: Tensor, exponent: Tensor | Number, result: Tensor) -> tuple[Tensor, Grad]:
    if not isinstance(exponent, Tensor):
        grad_base = F.mul(grad, F.mul(exponent, F.pow(base, exponent - 1)))
        return D.sum_to_shape(grad_base, base.shape), None
    grad_base = F.where(F.eq(exponent, 0), 0.0, F.mul(grad, F.mul(exponent, F.pow(base, F.sub(exponent, 1)))))
    limit = F.mul(F.eq(base, 0), F.ge(exponent, 0))  # base == 0 and exponent >= 0: the derivative is 0
    grad_exp = F.where(limit, 0.0, F.mul(grad, F.mul(result, F.log(base))))
    return D.sum_to_shape(grad_base, base.shape), D.sum_to_shape(grad_exp, exponent.shape)
