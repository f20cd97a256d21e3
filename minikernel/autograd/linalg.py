"""Matrix products (matmul, mm, dot): forward (numpy) and backward side by side, then ``matmul``.
The backward formula is exercise 3.5 (``derivatives.py``).
"""
from __future__ import annotations

import numpy as np

from ..ops import _C_NAMES
from ..tensor import Tensor
from . import derivatives as D, values as V
from .function import Function

_np = V.array


# ------------------------------------------------------------------- matmul
class Matmul(Function):
    _torch_name = "MatmulBackward0"
    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                               f"{a.ndim}D and {b.ndim}D")
        if a.dtype != b.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{_C_NAMES[a.dtype]} != {_C_NAMES[b.dtype]}")
        k, k2 = a.shape[-1], b.shape[0] if b.ndim == 1 else b.shape[-2]
        if k != k2:
            left = f"{a.shape[-2] if a.ndim > 1 else 1}x{k}"
            right = f"{k2}x{b.shape[-1] if b.ndim > 1 else 1}"
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({left} and {right})")
        ctx.save_for_backward(a, b)
        return V.wrap(np.matmul(_np(a), _np(b)), a.dtype)

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
