"""matmul_backward transposes dimensions 0 and 1 instead of the last two (wrong for batches)."""
from __future__ import annotations

import minikernel.autograd.derivatives as D
import minikernel.autograd.functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.5"

Shape = tuple[int, ...]
Grad = Tensor | None


def matmul_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    left = a if a.ndim > 1 else F.reshape(a, (1, a.shape[0]))
    right = b if b.ndim > 1 else F.reshape(b, (b.shape[0], 1))
    full = (*grad.shape, 1) if b.ndim == 1 else grad.shape
    full = (*full[:-1], 1, full[-1]) if a.ndim == 1 else full
    grad = F.reshape(grad, full)
    grad_a = F.matmul(grad, F.transpose(right, 0, 1))
    grad_b = F.matmul(F.transpose(left, -1, -2), grad)
    return (F.reshape(D.sum_to_shape(grad_a, left.shape), a.shape),
            F.reshape(D.sum_to_shape(grad_b, right.shape), b.shape))
