"""The element-wise operations: each Function's forward (the backend, ``V.compute``) and backward side by side,
then the functional form (``add(a, b)``, ...) that ``functions.py`` re-exports.

The formulas that are exercises (3.2 broadcast reduction, 3.4 mul/div/pow) are in
``derivatives.py``. Backward formulas call the functional forms, so with
``create_graph=True`` they are recorded too.
"""
from __future__ import annotations

from typing import Union

from ..kernels import layout
from ..tensor import Tensor
from . import derivatives as D, values as V
from .function import Function

Operand = Union[Tensor, int, float]


def _binary_values(a: Operand, b: Operand):
    """Promote and wrap scalars (0-d tensors of the result dtype): (a, b, result dtype).
    Shapes are checked once, by the backend (``minikernel/aten/tensor_iterator.py``)."""
    dtype = V.result_dtype(a, b)
    return V.operand(a, dtype), V.operand(b, dtype), dtype


def _reduce_to(grad: Tensor, shape: tuple) -> Tensor:
    """``grad`` summed back to an input's ``shape`` (exercise 3.2 when it was broadcast)."""
    return grad if grad.shape == tuple(shape) else D.sum_to_shape(grad, shape)


# ------------------------------------------------------------ element-wise
class Add(Function):
    _torch_name = "AddBackward0"

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        ctx.shapes = a.shape, b.shape
        return V.compute("add", a, b)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _reduce_to(grad, ctx.shapes[0]), _reduce_to(grad, ctx.shapes[1])


class Sub(Function):
    _torch_name = "SubBackward0"

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        ctx.shapes = a.shape, b.shape
        return V.compute("sub", a, b)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _reduce_to(grad, ctx.shapes[0]), _reduce_to(neg(grad), ctx.shapes[1])


def _save_needed(ctx, a: Tensor, b: Tensor, a_needed: bool, b_needed: bool) -> None:
    """Save only the operands a gradient needs (as ``derivatives.yaml`` says), with their shapes:
    an operand that isn't saved can be modified in place later without breaking backward."""
    ctx.likes = (a.shape, a.dtype), (b.shape, b.dtype)
    ctx.save_for_backward(a if a_needed else None, b if b_needed else None)


def _unpack_or_stand_in(ctx) -> tuple[Tensor, Tensor]:
    """The saved operands; one that wasn't saved is only needed for the gradient nobody asked for,
    so zeros of its shape stand in (stride 0: no memory), and that gradient is dropped."""
    saved = ctx.saved_tensors
    return tuple(t if t is not None else V.stand_in(shape, dtype) for t, (shape, dtype) in zip(saved, ctx.likes))


def _keep_needed(ctx, grads: tuple) -> tuple:
    return tuple(g if needed else None for g, needed in zip(grads, ctx.needs_input_grad))


class Mul(Function):
    """``a * b``: saves ``b`` if ``a`` needs a gradient and ``a`` if ``b`` does (torch's MulBackward0)."""
    _torch_name = "MulBackward0"

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        need_a, need_b = ctx.needs_input_grad[:2] if ctx.needs_input_grad else (False, False)
        _save_needed(ctx, a, b, need_b, need_a)
        return V.compute("mul", a, b)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _keep_needed(ctx, D.mul_backward(grad, *_unpack_or_stand_in(ctx)))


class Div(Function):
    """``a / b``: saves ``b`` if either needs a gradient, ``a`` if ``b`` does (torch's DivBackward0)."""
    _torch_name = "DivBackward0"

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        need_a, need_b = ctx.needs_input_grad[:2] if ctx.needs_input_grad else (False, False)
        _save_needed(ctx, a, b, need_b, need_a or need_b)
        return V.compute("div", a, b)

    @staticmethod
    def backward(ctx, grad: Tensor):
        a, b = _unpack_or_stand_in(ctx)
        if not ctx.needs_input_grad[1]:
            a = V.stand_in(a.shape, a.dtype)
        return _keep_needed(ctx, D.div_backward(grad, a, b))


class Pow(Function):
    """``base ** exponent``; the exponent may be a tensor or a Python number."""
    _torch_name = "PowBackward0"

    @staticmethod
    def forward(ctx, base: Tensor, exponent: Operand) -> Tensor:
        result = V.compute("pow", base, exponent)
        ctx.exponent = exponent if not isinstance(exponent, Tensor) else None
        # the result only when the exponent is a tensor (its gradient needs it), as torch saves:
        # writing into ``x ** 2`` later does not spoil its backward
        tensor_exponent = isinstance(exponent, Tensor)
        ctx.save_for_backward(base, exponent if tensor_exponent else None, result if tensor_exponent else None)
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


def _unary(name: str, save: str, derivative) -> type:
    """The Function class of a one-input op (``aten::<name lowercased>``): what it saves
    ("input", "result" or "nothing", as ``derivatives.yaml`` says) and ``derivative(grad, saved) -> grad of the input``."""
    def forward(ctx, x: Tensor) -> Tensor:
        out = V.compute(name.lower(), x)
        if save != "nothing":
            ctx.save_for_backward(x if save == "input" else out)
        return out

    def backward(ctx, grad: Tensor):
        saved = ctx.saved_tensors
        return derivative(grad, saved[0] if saved else None)

    return type(name, (Function,), {"_torch_name": f"{name}Backward0", "__module__": __name__,
                                    "forward": staticmethod(forward), "backward": staticmethod(backward)})


Neg = _unary("Neg", "nothing", lambda g, _: neg(g))  # saves nothing, as torch's NegBackward0
Exp = _unary("Exp", "result", lambda g, r: mul(g, r))
Log = _unary("Log", "input", lambda g, x: div(g, x))
Relu = _unary("Relu", "result", lambda g, r: mul(g, gt(r, 0)))
Sigmoid = _unary("Sigmoid", "result", lambda g, r: mul(g, mul(r, sub(1, r))))
Tanh = _unary("Tanh", "result", lambda g, r: mul(g, sub(1, mul(r, r))))


class Clone(Function):
    _torch_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, contiguous: bool = False) -> Tensor:
        """``x.clone()`` keeps a dense layout (``preserve_format``); ``contiguous=True`` is
        ``clone(memory_format=torch.contiguous_format)``, what ``contiguous()`` and a copying
        ``reshape`` record."""
        out = V.compute("clone", x)
        return V.wrap(V.array(out)) if contiguous and not layout.is_contiguous(out.shape, out.stride()) else out

    @staticmethod
    def backward(ctx, grad: Tensor):
        return grad, None


class Where(Function):
    _torch_name = "WhereBackward0"

    @staticmethod
    def forward(ctx, condition: Tensor, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(condition)
        ctx.shapes = a.shape, b.shape
        return V.compute("where", condition, a, b)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (condition,) = ctx.saved_tensors
        zero = V.zeros_like(grad)
        return (None, _reduce_to(where(condition, grad, zero), ctx.shapes[0]),
                _reduce_to(where(condition, zero, grad), ctx.shapes[1]))


# --------------------------------------------------------- the functional API
def add(a: Operand, b: Operand) -> Tensor:
    return Add.apply(*_binary_values(a, b)[:2])


class Rsub(Sub):
    """``number - x`` (``Tensor.__rsub__``): torch records ``rsub(x, number)``."""

    _torch_name = "RsubBackward1"


def sub(a: Operand, b: Operand) -> Tensor:
    return (Sub if isinstance(a, Tensor) else Rsub).apply(*_binary_values(a, b)[:2])


def mul(a: Operand, b: Operand) -> Tensor:
    return Mul.apply(*_binary_values(a, b)[:2])


def div(a: Operand, b: Operand) -> Tensor:
    return Div.apply(*_binary_values(a, b)[:2])


def pow(base: Operand, exponent: Operand) -> Tensor:  # noqa: A001 - torch's name
    """``base ** exponent``: PowBackward0 (number exponent), 1 (tensor), 2 (number base)."""
    if not isinstance(base, Tensor):
        return PowScalarBase.apply(V.operand(base, V.result_dtype(base, exponent)), exponent)
    if isinstance(exponent, Tensor):
        return PowTensor.apply(base, exponent)
    return Pow.apply(base, exponent)


def neg(x: Tensor) -> Tensor:
    return Neg.apply(x)


def exp(x: Tensor) -> Tensor:
    return Exp.apply(x)


def log(x: Tensor) -> Tensor:
    return Log.apply(x)


def relu(x: Tensor) -> Tensor:
    return Relu.apply(x)


def sigmoid(x: Tensor) -> Tensor:
    return Sigmoid.apply(x)


def tanh(x: Tensor) -> Tensor:
    return Tanh.apply(x)


def clone(x: Tensor, contiguous: bool = False) -> Tensor:
    return Clone.apply(x, contiguous)


def where(condition: Tensor, a: Operand, b: Operand) -> Tensor:
    dtype = V.result_dtype(a, b)
    return Where.apply(condition, V.operand(a, dtype), V.operand(b, dtype))


# ------------------------------------------------ not differentiable (no graph)
def gt(a: Operand, b: Operand) -> Tensor:
    return V.compute("gt", a, b)


def lt(a: Operand, b: Operand) -> Tensor:
    return V.compute("lt", a, b)


def ge(a: Operand, b: Operand) -> Tensor:
    return V.compute("ge", a, b)


def le(a: Operand, b: Operand) -> Tensor:
    return V.compute("le", a, b)


def eq(a: Operand, b: Operand) -> Tensor:
    return V.compute("eq", a, b)
