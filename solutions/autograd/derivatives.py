"""Reference bodies for minikernel/autograd/derivatives.py (exercises 3.2, 3.4-3.6)."""
from __future__ import annotations

from numbers import Number
from typing import Optional, Sequence, Union

import numpy as np

import minikernel.autograd.derivatives as D
import minikernel.autograd.functions as F
import minikernel.autograd.values as V
from minikernel.tensor import Tensor

Shape = tuple[int, ...]
Grad = Optional[Tensor]


def sum_to_shape(grad: Tensor, shape: Sequence[int]) -> Tensor:
    shape = tuple(shape)
    lead = grad.ndim - len(shape)
    if lead:
        grad = F.sum(grad, tuple(range(lead)))
    dims = tuple(d for d, n in enumerate(shape) if n == 1 and grad.shape[d] != 1)
    return F.sum(grad, dims, keepdim=True) if dims else grad


def mul_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    return D.sum_to_shape(F.mul(grad, b), a.shape), D.sum_to_shape(F.mul(grad, a), b.shape)


def div_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    grad_a = F.div(grad, b)
    grad_b = F.neg(F.div(F.mul(grad, a), F.mul(b, b)))
    return D.sum_to_shape(grad_a, a.shape), D.sum_to_shape(grad_b, b.shape)


def pow_backward(grad: Tensor, base: Tensor, exponent: Union[Tensor, Number], result: Tensor) -> tuple[Tensor, Grad]:
    if not isinstance(exponent, Tensor):
        if exponent == 0:  # d/dbase of base ** 0 is 0 everywhere (not 0 * base ** -1)
            return F.zeros_like(base), None
        grad_base = F.mul(grad, F.mul(exponent, F.pow(base, exponent - 1)))
        return D.sum_to_shape(grad_base, base.shape), None
    grad_base = F.where(F.eq(exponent, 0), 0.0, F.mul(grad, F.mul(exponent, F.pow(base, F.sub(exponent, 1)))))
    limit = F.mul(F.eq(base, 0), F.ge(exponent, 0))  # base == 0 and exponent >= 0: the derivative is 0
    grad_exp = F.where(limit, 0.0, F.mul(grad, F.mul(result, F.log(base))))
    return D.sum_to_shape(grad_base, base.shape), D.sum_to_shape(grad_exp, exponent.shape)


def matmul_backward(grad: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    left = a if a.ndim > 1 else F.reshape(a, (1, a.shape[0]))
    right = b if b.ndim > 1 else F.reshape(b, (b.shape[0], 1))
    full = (*grad.shape, 1) if b.ndim == 1 else grad.shape
    full = (*full[:-1], 1, full[-1]) if a.ndim == 1 else full
    grad = F.reshape(grad, full)
    grad_a = F.matmul(grad, F.transpose(right, -1, -2))
    grad_b = F.matmul(F.transpose(left, -1, -2), grad)
    return (F.reshape(D.sum_to_shape(grad_a, left.shape), a.shape),
            F.reshape(D.sum_to_shape(grad_b, right.shape), b.shape))


def max_backward(grad: Tensor, x: Tensor, result: Tensor) -> Tensor:
    mask = F.eq(x, result)
    return F.div(F.mul(grad, mask), F.sum(mask))


def max_dim_backward(grad: Tensor, indices: Tensor, shape: Shape, dim: int, keepdim: bool) -> Tensor:
    if not shape:
        return grad
    kept = tuple(1 if d == dim else n for d, n in enumerate(shape))
    if not keepdim:
        grad, indices = F.reshape(grad, kept), F.reshape(indices, kept)
    positions = V.wrap(np.arange(shape[dim]).reshape([-1 if d == dim else 1 for d in range(len(shape))]))
    mask = F.eq(positions, indices)
    return F.mul(mask, grad)
