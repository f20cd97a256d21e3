"""matmul_backward puts a 1-D operand's removed dimension back with reshape(..., -1, ...) ("let reshape find the 1"): beside a size 0 the -1 is ambiguous and reshape refuses it."""
from __future__ import annotations

import minikernel.autograd.derivatives as D
import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.5"


def matmul_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    left = a if a.ndim > 1 else F.reshape(a, (-1, a.shape[0]))
    right = b if b.ndim > 1 else F.reshape(b, (b.shape[0], -1))
    if b.ndim == 1:
        grad = F.reshape(grad, (*grad.shape, -1))
    if a.ndim == 1:
        grad = F.reshape(grad, (*grad.shape[:-1], -1, grad.shape[-1]))
    grad_a = F.matmul(grad, F.transpose(right, -1, -2))
    grad_b = F.matmul(F.transpose(left, -1, -2), grad)
    return (F.reshape(D.sum_to_shape(grad_a, left.shape), a.shape),
            F.reshape(D.sum_to_shape(grad_b, right.shape), b.shape))
