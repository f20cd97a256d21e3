"""Matrix products (matmul, mm, dot): forward (the backend) and backward side by side, then ``matmul``.
The backward formula is exercise 3.5 (``derivatives.py``).
"""
from __future__ import annotations

from ..tensor import Tensor
from . import derivatives as D, values as V
from .function import Function


# ------------------------------------------------------------------- matmul
class Matmul(Function):
    _torch_name = "MatmulBackward0"
    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        result = V.compute("matmul", a, b)  # checks shapes and dtypes, as without autograd
        ctx.save_for_backward(a, b)
        return result

    @staticmethod
    def backward(ctx, grad: Tensor):
        return D.matmul_backward(grad, *ctx.saved_tensors)


class Mm(Matmul):
    _torch_name = "MmBackward0"


class Dot(Matmul):
    _torch_name = "DotBackward0"


def matmul(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim == 2 and b.ndim == 2:
        return Mm.apply(a, b)
    return (Dot if a.ndim == 1 and b.ndim == 1 else Matmul).apply(a, b)
