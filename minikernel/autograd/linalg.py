"""Matrix products (matmul, mm, dot): forward (the backend) and backward side by side, then ``matmul``.
The backward formula is exercise 3.5 (``derivatives.py``).
"""
from __future__ import annotations

from ..tensor import Tensor
from . import derivatives as D, values as V
from .function import Function
from .pointwise import _keep_needed, _save_needed, _unpack_or_stand_in


# ------------------------------------------------------------------- matmul
class Matmul(Function):
    """``a @ b``: saves ``b`` if ``a`` needs a gradient and ``a`` if ``b`` does (torch's MmBackward0,
    MvBackward0, DotBackward0 save per formula), so an operand nobody differentiates through may
    be written in place later."""
    _torch_name = "MatmulBackward0"
    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        result = V.compute("matmul", a, b)  # checks shapes and dtypes, as without autograd
        need_a, need_b = ctx.needs_input_grad[:2] if ctx.needs_input_grad else (False, False)
        _save_needed(ctx, a, b, need_b, need_a)
        return result

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _keep_needed(ctx, D.matmul_backward(grad, *_unpack_or_stand_in(ctx)))


class Mm(Matmul):
    _torch_name = "MmBackward0"


class Dot(Matmul):
    _torch_name = "DotBackward0"


def matmul(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim == 2 and b.ndim == 2:
        return Mm.apply(a, b)
    return (Dot if a.ndim == 1 and b.ndim == 1 else Matmul).apply(a, b)
