"""The differentiable operations, as functions: ``F.mul(a, b)``, ``F.sum(x, dim)``, ...

Every operation is a ``Function`` (``autograd.py``; the classes are in
``fn_pointwise.py`` and ``fn_shape.py``) with a static ``forward`` that computes
the values (numpy, see ``values.py``) and saves what backward needs, and a static
``backward`` that turns the gradient of the output into gradients of the inputs.
Backward formulas are written with the functions of this module, so that with
``create_graph=True`` they are recorded too and can be differentiated again
(second derivatives, gradient penalties).

The formulas that are exercises (3.2 broadcast reduction, 3.4 mul/div/pow,
3.5 matmul, 3.6 max) live in ``derivatives.py``.

Used as ``minikernel.functions.mul(a, b)`` (imported as ``F``), or through the
Tensor operators when a tensor requires grad: ``a * b``.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from . import ops
from . import values as V
from .fn_pointwise import (Add, Clone, Div, Exp, Log, Mul, Neg, Pow, PowScalarBase, PowTensor, Relu,  # noqa: F401
                           Sigmoid, Sub, Tanh, Where)
from .fn_shape import (Dot, Expand, Index, Matmul, Max, MaxDim, MaxResult, Mean, MeanDim, Mm, Permute,  # noqa: F401
                       Sum, SumDim, T, Transpose, View)
from .tensor import Tensor, _sizes, _wrap_dim, bool_

Operand = Union[Tensor, int, float]
_np = V.array


def _binary_values(a: Operand, b: Operand):
    """Promote, wrap scalars and broadcast-check two operands: (a, b, result dtype)."""
    dtype = V.result_dtype(a, b)
    a, b = V.operand(a, dtype), V.operand(b, dtype)
    V.broadcast_shape(a.shape, b.shape)
    return a, b, dtype


# --------------------------------------------------------- the functional API
def add(a: Operand, b: Operand) -> Tensor:
    return Add.apply(*_binary_values(a, b)[:2])


def sub(a: Operand, b: Operand) -> Tensor:
    return Sub.apply(*_binary_values(a, b)[:2])


def mul(a: Operand, b: Operand) -> Tensor:
    return Mul.apply(*_binary_values(a, b)[:2])


def div(a: Operand, b: Operand) -> Tensor:
    return Div.apply(*_binary_values(a, b)[:2])


def pow(base: Operand, exponent: Operand) -> Tensor:  # noqa: A001 - torch's name
    """``base ** exponent``: PowBackward0 (number exponent), 1 (tensor), 2 (number base)."""
    if not isinstance(base, Tensor):
        return PowScalarBase.apply(V.operand(base, V.result_dtype(base, exponent)), exponent)
    if isinstance(exponent, Tensor):
        V.broadcast_shape(base.shape, exponent.shape)
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


def clone(x: Tensor) -> Tensor:
    return Clone.apply(x)


def where(condition: Tensor, a: Operand, b: Operand) -> Tensor:
    dtype = V.result_dtype(a, b)
    return Where.apply(condition, V.operand(a, dtype), V.operand(b, dtype))


def sum(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001 - torch's name
    return (Sum if dim is None else SumDim).apply(x, dim, keepdim)


def mean(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return (Mean if dim is None else MeanDim).apply(x, dim, keepdim)


def max(x: Tensor, dim: Optional[int] = None, keepdim: bool = False):  # noqa: A001 - torch's name
    """``x.max()`` -> a 0-d tensor; ``x.max(dim)`` -> ``(values, indices)`` like torch."""
    if dim is None:
        return Max.apply(x)
    return MaxResult(*MaxDim.apply(x, dim, keepdim))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim == 2 and b.ndim == 2:
        return Mm.apply(a, b)
    return (Dot if a.ndim == 1 and b.ndim == 1 else Matmul).apply(a, b)


def view(x: Tensor, shape: Sequence[int]) -> Tensor:
    return View.apply(x, _infer(shape, x.numel()), False)


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    return View.apply(x, _infer(shape, x.numel()), True)


def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    return Permute.apply(x, tuple(dims))


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    order = list(range(x.ndim))
    if x.ndim:
        d0, d1 = _wrap_dim(dim0, x.ndim), _wrap_dim(dim1, x.ndim)
        order[d0], order[d1] = order[d1], order[d0]
    return Transpose.apply(x, tuple(order))


def t(x: Tensor) -> Tensor:
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return T.apply(x, tuple(reversed(range(x.ndim))))


def expand(x: Tensor, shape: Sequence[int]) -> Tensor:
    return Expand.apply(x, tuple(shape))


def index(x: Tensor, key) -> Tensor:
    return Index.apply(x, key)


def _infer(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = int(np.prod([s for s in shape if s != -1]))
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if int(np.prod(shape)) != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# ------------------------------------------------ not differentiable (no graph)
def _compare(numpy_fn, a: Operand, b: Operand) -> Tensor:
    dtype = V.result_dtype(a, b)
    a, b = V.operand(a, dtype), V.operand(b, dtype)
    V.broadcast_shape(a.shape, b.shape)
    return V.wrap(numpy_fn(_np(a), _np(b)), bool_)


def gt(a: Operand, b: Operand) -> Tensor:
    return _compare(np.greater, a, b)


def lt(a: Operand, b: Operand) -> Tensor:
    return _compare(np.less, a, b)


def ge(a: Operand, b: Operand) -> Tensor:
    return _compare(np.greater_equal, a, b)


def le(a: Operand, b: Operand) -> Tensor:
    return _compare(np.less_equal, a, b)


def eq(a: Operand, b: Operand) -> Tensor:
    return _compare(np.equal, a, b)


def zeros_like(x: Tensor) -> Tensor:
    return V.wrap(np.zeros(x.shape, x.dtype))


def ones_like(x: Tensor) -> Tensor:
    return V.wrap(np.ones(x.shape, x.dtype))


def zeros(*shape: int, dtype=np.float32) -> Tensor:
    """``zeros(2, 3)`` or ``zeros((2, 3))``, like torch."""
    return V.wrap(np.zeros(_sizes(shape), dtype))


def ones(*shape: int, dtype=np.float32) -> Tensor:
    return V.wrap(np.ones(_sizes(shape), dtype))


# ----------------------------------------------------------------- in-place
_INPLACE = {"add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "exp": exp, "log": log,
            "relu": relu, "sigmoid": sigmoid, "tanh": tanh, "pow": pow}


def inplace(name: str, x: Tensor, other: Optional[Operand] = None) -> Tensor:
    """``x.<name>_(other)``: compute out of place, write the values into ``x``, bump its version.

    While recording, ``x`` then takes the new node as its ``grad_fn`` (PyTorch
    "rebases" its history); anything that saved the old ``x`` for backward will
    find its version changed and refuse to run.
    """
    from .graph import is_grad_enabled

    args = (x,) if other is None else (x, other)
    recording = is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args)
    if recording and x.is_leaf and x.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    source = x._alias() if recording else x
    result = _INPLACE[name](*((source,) if other is None else (source, other)))
    ops.check_out(f"{name}_", x, result.shape, result.dtype, "cpu", [source], inplace=True)  # torch's refusals
    np.copyto(_np(x), _np(result), casting="unsafe")
    x._bump_version()
    if recording:
        x._set_history(result.grad_fn, result._output_nr)
    return x
