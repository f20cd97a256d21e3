"""pow_backward applies the zero-base limit of d/dexponent only where exponent > 0: at base 0 and exponent 0 it gives grad * 1 * log(0) = -inf, where torch gives 0."""
EXERCISE = "3.4"

import minikernel.autograd.derivatives as D
import minikernel.autograd.functions as F
from minikernel.tensor import Tensor


def pow_backward(grad, base, exponent, result):
    if not isinstance(exponent, Tensor):
        if exponent == 0:
            return F.zeros_like(base), None
        grad_base = F.mul(grad, F.mul(exponent, F.pow(base, exponent - 1)))
        return D.sum_to_shape(grad_base, base.shape), None
    grad_base = F.where(F.eq(exponent, 0), 0.0, F.mul(grad, F.mul(exponent, F.pow(base, F.sub(exponent, 1)))))
    limit = F.mul(F.eq(base, 0), F.gt(exponent, 0))
    grad_exp = F.where(limit, 0.0, F.mul(grad, F.mul(result, F.log(base))))
    return D.sum_to_shape(grad_base, base.shape), D.sum_to_shape(grad_exp, exponent.shape)
