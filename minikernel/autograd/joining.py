"""The Autograd kernels of ``cat`` and ``stack`` (``CatBackward0``, ``StackBackward0``).

Forward: the backend's join (``minikernel/aten/shape.py``). Backward: each input gets
its own piece of the gradient — a ``narrow`` along the joined dim for ``cat``, a
``select`` for ``stack`` — cast back to its dtype; recorded, so it is differentiable
again.
"""
from __future__ import annotations

from typing import Sequence

from ..aten import shape_rules as R
from ..tensor import Tensor
from . import values as V
from .function import Function


class Cat(Function):
    _torch_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim: int, *tensors: Tensor) -> Tensor:
        out = V.compute("cat", list(tensors), dim)
        ctx.dim = R.wrap_dim(dim, out.ndim)
        ctx.sizes = [0 if t.ndim == 1 and t.shape[0] == 0 else t.shape[ctx.dim] for t in tensors]
        ctx.shapes = [t.shape for t in tensors]
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        grads, start = [], 0
        for size, shape in zip(ctx.sizes, ctx.shapes):
            if size == 0 and len(shape) == 1:
                grads.append(V.zeros(shape, dtype=grad.dtype))
                continue
            grads.append(V.call("slice.Tensor", grad, ctx.dim, start, start + size, 1))
            start += size
        return (None, *grads)


class Stack(Function):
    _torch_name = "StackBackward0"

    @staticmethod
    def forward(ctx, dim: int, *tensors: Tensor) -> Tensor:
        out = V.compute("stack", list(tensors), dim)
        ctx.dim = R.wrap_dim(dim, out.ndim)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        return (None, *V.call("unbind.int", grad, ctx.dim))


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return Cat.apply(dim, *tensors)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return Stack.apply(dim, *tensors)
