"""The element-wise Functions: forward with numpy, backward with ``minikernel.functions``.

See ``functions.py`` for how these fit together; the formulas that are exercises
(3.2 broadcast reduction, 3.4 mul/div/pow) are in ``derivatives.py``.
"""
from __future__ import annotations

from typing import Union

import numpy as np

from . import derivatives as D
from . import functions as F
from . import values as V
from .autograd import Function
from .tensor import Tensor

Operand = Union[Tensor, int, float]
_np = V.array


def _reduce_to(grad: Tensor, shape: tuple) -> Tensor:
    """``grad`` summed back to an input's ``shape`` (exercise 3.2 when it was broadcast)."""
    return grad if grad.shape == tuple(shape) else D.sum_to_shape(grad, shape)



# ------------------------------------------------------------ element-wise
class Add(Function):
    _torch_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        ctx.shapes = a.shape, b.shape
        return V.wrap(np.add(_np(a), _np(b)), V.result_dtype(a, b))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _reduce_to(grad, ctx.shapes[0]), _reduce_to(grad, ctx.shapes[1])


class Sub(Function):
    _torch_name = "SubBackward0"

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        ctx.shapes = a.shape, b.shape
        return V.wrap(np.subtract(_np(a), _np(b)), V.result_dtype(a, b))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _reduce_to(grad, ctx.shapes[0]), _reduce_to(F.neg(grad), ctx.shapes[1])


class Mul(Function):
    _torch_name = "MulBackward0"

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(a, b)
        return V.wrap(np.multiply(_np(a), _np(b)), V.result_dtype(a, b))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return D.mul_backward(grad, *ctx.saved_tensors)


class Div(Function):
    _torch_name = "DivBackward0"

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.true_divide(_np(a), _np(b))
        return V.wrap(values, V.default_float(V.result_dtype(a, b)))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return D.div_backward(grad, *ctx.saved_tensors)


class Pow(Function):
    """``base ** exponent``; the exponent may be a tensor or a Python number."""
    _torch_name = "PowBackward0"

    @staticmethod
    def forward(ctx, base: Tensor, exponent: Operand) -> Tensor:
        dtype = V.result_dtype(base, exponent)
        e = _np(exponent) if isinstance(exponent, Tensor) else exponent
        with np.errstate(divide="ignore", invalid="ignore"):
            result = V.wrap(np.power(_np(base).astype(dtype), e), dtype)
        ctx.exponent = exponent if not isinstance(exponent, Tensor) else None
        ctx.save_for_backward(base, exponent if isinstance(exponent, Tensor) else None, result)
        return result

    @staticmethod
    def backward(ctx, grad: Tensor):
        base, exponent, result = ctx.saved_tensors
        grads = D.pow_backward(grad, base, exponent if exponent is not None else ctx.exponent, result)
        return grads if exponent is not None else (grads[0], None)


class PowTensor(Pow):
    _torch_name = "PowBackward1"


class PowScalarBase(Pow):
    _torch_name = "PowBackward2"


def _unary(name: str, numpy_fn, save: str, derivative, keep_dtype: bool = False) -> type:
    """The Function class of a one-input op: its numpy function, what it saves
    ("input" or "result") and ``derivative(grad, saved) -> grad of the input``."""
    def forward(ctx, x: Tensor) -> Tensor:
        dtype = x.dtype if keep_dtype else V.default_float(x.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = V.wrap(numpy_fn(_np(x).astype(dtype, copy=False)), dtype)
        ctx.save_for_backward(x if save == "input" else out)
        return out

    def backward(ctx, grad: Tensor):
        (saved,) = ctx.saved_tensors
        return derivative(grad, saved)

    return type(name, (Function,), {"_torch_name": f"{name}Backward0", "__module__": __name__,
                                    "forward": staticmethod(forward), "backward": staticmethod(backward)})


Neg = _unary("Neg", np.negative, "input", lambda g, x: F.neg(g), keep_dtype=True)
Exp = _unary("Exp", np.exp, "result", lambda g, r: F.mul(g, r))
Log = _unary("Log", np.log, "input", lambda g, x: F.div(g, x))
Relu = _unary("Relu", lambda v: np.maximum(v, 0), "result", lambda g, r: F.mul(g, F.gt(r, 0)), keep_dtype=True)
Sigmoid = _unary("Sigmoid", lambda v: 1 / (1 + np.exp(-v)), "result", lambda g, r: F.mul(g, F.mul(r, F.sub(1, r))))
Tanh = _unary("Tanh", np.tanh, "result", lambda g, r: F.mul(g, F.sub(1, F.mul(r, r))))


class Clone(Function):
    _torch_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        return V.wrap(_np(x))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return grad


class Where(Function):
    _torch_name = "WhereBackward0"

    @staticmethod
    def forward(ctx, condition: Tensor, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(condition)
        ctx.shapes = a.shape, b.shape
        return V.wrap(np.where(_np(condition), _np(a), _np(b)), V.result_dtype(a, b))

    @staticmethod
    def backward(ctx, grad: Tensor):
        (condition,) = ctx.saved_tensors
        zero = F.zeros_like(grad)
        return (None, _reduce_to(F.where(condition, grad, zero), ctx.shapes[0]),
                _reduce_to(F.where(condition, zero, grad), ctx.shapes[1]))
