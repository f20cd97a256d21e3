"""The differentiable operations: one ``Function`` each, forward with numpy, backward with these same ops.

Every operation is a ``Function`` (``autograd.py``) with a static ``forward`` that
computes the values (numpy, see ``values.py``) and saves what backward needs,
and a static ``backward`` that turns the gradient of the output into gradients
of the inputs. Backward formulas are written with the functions of this module,
so that with ``create_graph=True`` they are recorded too and can be
differentiated again (second derivatives, gradient penalties).

The formulas that are exercises (3.2 broadcast reduction, 3.4 mul/div/pow,
3.5 matmul, 3.6 max) live in ``derivatives.py``; the others are here.

Used as ``minikernel.functions.mul(a, b)`` (imported as ``F``), or through the
Tensor operators when a tensor requires grad: ``a * b``.
"""
from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Optional, Sequence, Union

import numpy as np

from . import derivatives as D
from . import values as V
from .autograd import Function
from .tensor import Tensor, _wrap_dim, bool_

Operand = Union[Tensor, int, float]
_np = V.array


def _reduce_to(grad: Tensor, shape: tuple) -> Tensor:
    """``grad`` summed back to an input's ``shape`` (exercise 3.2 when it was broadcast)."""
    return grad if grad.shape == tuple(shape) else D.sum_to_shape(grad, shape)


def _binary_values(name: str, a: Operand, b: Operand):
    """Promote, wrap scalars and broadcast-check two operands: (a, b, result dtype)."""
    dtype = V.result_dtype(a, b)
    a, b = V.operand(a, dtype), V.operand(b, dtype)
    V.broadcast_shape(a.shape, b.shape)
    return a, b, dtype


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
        return _reduce_to(grad, ctx.shapes[0]), _reduce_to(neg(grad), ctx.shapes[1])


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


Neg = _unary("Neg", np.negative, "input", lambda g, x: neg(g), keep_dtype=True)
Exp = _unary("Exp", np.exp, "result", lambda g, r: mul(g, r))
Log = _unary("Log", np.log, "input", lambda g, x: div(g, x))
Relu = _unary("Relu", lambda v: np.maximum(v, 0), "result", lambda g, r: mul(g, gt(r, 0)), keep_dtype=True)
Sigmoid = _unary("Sigmoid", lambda v: 1 / (1 + np.exp(-v)), "result", lambda g, r: mul(g, mul(r, sub(1, r))))
Tanh = _unary("Tanh", np.tanh, "result", lambda g, r: mul(g, sub(1, mul(r, r))))


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
        zero = zeros_like(grad)
        return (None, _reduce_to(where(condition, grad, zero), ctx.shapes[0]),
                _reduce_to(where(condition, zero, grad), ctx.shapes[1]))


# --------------------------------------------------------------- reductions
def _dims(dim, ndim: int) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(sorted({_wrap_dim(int(d), ndim) for d in dims}))


def _unsqueeze_to(grad: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Put back the reduced dims as size 1 (when ``keepdim`` was False), then expand to ``shape``."""
    if not keepdim:
        kept = [1 if d in dims else n for d, n in enumerate(shape)]
        grad = reshape(grad, tuple(kept))
    return expand(grad, tuple(shape))


class Sum(Function):
    _torch_name = "SumBackward0"
    @staticmethod
    def forward(ctx, x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, _dims(dim, x.ndim), keepdim
        dtype = x.dtype if x.dtype.kind == "f" else np.dtype("int64")
        return V.wrap(np.sum(_np(x), axis=ctx.dims, keepdims=keepdim, dtype=dtype))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _unsqueeze_to(grad, ctx.shape, ctx.dims, ctx.keepdim), None, None


class SumDim(Sum):
    _torch_name = "SumBackward1"


class Mean(Function):
    _torch_name = "MeanBackward0"
    @staticmethod
    def forward(ctx, x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        if x.dtype.kind != "f":
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating "
                               "point or complex dtype. Got: Long")
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, _dims(dim, x.ndim), keepdim
        ctx.count = int(np.prod([x.shape[d] for d in ctx.dims])) if x.ndim else 1
        with np.errstate(invalid="ignore", divide="ignore"):
            return V.wrap(np.mean(_np(x), axis=ctx.dims, keepdims=keepdim), x.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return div(_unsqueeze_to(grad, ctx.shape, ctx.dims, ctx.keepdim), ctx.count), None, None


class MeanDim(Mean):
    _torch_name = "MeanBackward1"


class Max(Function):
    """``x.max()``: the largest value; ties share the gradient evenly (torch's rule)."""
    _torch_name = "MaxBackward1"

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        if x.numel() == 0:
            raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        result = V.wrap(np.max(_np(x)))
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, grad: Tensor):
        return D.max_backward(grad, *ctx.saved_tensors)


MaxResult = namedtuple("max", ["values", "indices"])  # torch.return_types.max


class MaxDim(Function):
    """``x.max(dim)``: (values, indices); the gradient goes to the first maximum's index."""
    _torch_name = "MaxBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, dim: int, keepdim: bool = False):
        d = _wrap_dim(dim, builtins.max(x.ndim, 1))
        data = _np(x) if x.ndim else _np(x).reshape(1)
        if data.shape[d] == 0:
            raise IndexError(f"max(): Expected reduction dim {d} to have non-zero size.")
        indices = np.argmax(data, axis=d)
        values = np.take_along_axis(data, np.expand_dims(indices, d), d)
        if not keepdim or not x.ndim:
            values = np.squeeze(values, d)
        else:
            indices = np.expand_dims(indices, d)
        if not x.ndim:
            values, indices = values.reshape(()), np.zeros((), np.int64)
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, d, keepdim
        idx = V.wrap(indices.astype(np.int64))
        ctx.save_for_backward(idx)
        return V.wrap(values), idx

    @staticmethod
    def backward(ctx, grad: Tensor, _grad_indices: Optional[Tensor]):
        (indices,) = ctx.saved_tensors
        return D.max_dim_backward(grad, indices, ctx.shape, ctx.dim, ctx.keepdim), None, None


# ------------------------------------------------------------------- matmul
class Matmul(Function):
    _torch_name = "MatmulBackward0"
    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                               f"{a.ndim}D and {b.ndim}D")
        if a.dtype != b.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype} != {b.dtype}")
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


# -------------------------------------------------------------------- views
class View(Function):
    """``view``/``reshape``: a new header over the same memory when the strides allow it."""
    _torch_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, shape: tuple, copy_ok: bool = False) -> Tensor:
        ctx.shape = x.shape
        try:
            return V.view_of(x, np.reshape(_np(x), shape, copy=False))
        except ValueError as err:
            if "copy" not in str(err) and "cannot reshape" in str(err):
                raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {x.numel()}") from None
            if not copy_ok:
                raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one"
                                   " dimension spans across two contiguous subspaces). Use .reshape(...) "
                                   "instead.") from None
            return V.wrap(np.reshape(_np(x), shape))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return reshape(grad, ctx.shape), None, None


class Permute(Function):
    _torch_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, dims: tuple) -> Tensor:
        dims = tuple(_wrap_dim(d, x.ndim) for d in dims)
        if len(dims) != x.ndim or len(set(dims)) != len(dims):
            raise RuntimeError(f"permute(): dims {list(dims)} must name each of the {x.ndim} dimensions once")
        ctx.inverse = tuple(int(i) for i in np.argsort(dims))
        return V.view_of(x, np.transpose(_np(x), dims))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return permute(grad, ctx.inverse), None


class Transpose(Permute):
    _torch_name = "TransposeBackward0"


class T(Permute):
    _torch_name = "TBackward0"


class Expand(Function):
    _torch_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, shape: tuple) -> Tensor:
        shape = tuple(x.shape[d - len(shape) + x.ndim] if n == -1 else n for d, n in enumerate(shape))
        ctx.shape = x.shape
        try:
            return V.view_of(x, np.broadcast_to(_np(x), shape))
        except ValueError:
            raise RuntimeError(f"The expanded size of the tensor must match the existing size at non-singleton "
                               f"dimensions: cannot expand {list(x.shape)} to {list(shape)}") from None

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _reduce_to(grad, ctx.shape), None


class Index(Function):
    """``x[key]`` with ints and slices: a view; backward puts the gradient back in place."""
    _torch_name = "SliceBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, key) -> Tensor:
        ctx.shape, ctx.dtype, ctx.key = x.shape, x.dtype, key
        return V.view_of(x, _np(x)[key])

    @staticmethod
    def backward(ctx, grad: Tensor):
        return IndexBackward.apply(grad, ctx.shape, ctx.key), None


class IndexBackward(Function):
    """Zeros of the input's shape with ``grad`` written at ``key`` (differentiable again: its
    backward is indexing)."""
    _torch_name = "SliceBackwardBackward0"

    @staticmethod
    def forward(ctx, grad: Tensor, shape: tuple, key) -> Tensor:
        ctx.key = key
        out = np.zeros(shape, grad.dtype)
        out[key] = _np(grad)
        return V.wrap(out)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return index(grad, ctx.key), None, None


# --------------------------------------------------------- the functional API
def add(a: Operand, b: Operand) -> Tensor:
    return Add.apply(*_binary_values("add", a, b)[:2])


def sub(a: Operand, b: Operand) -> Tensor:
    return Sub.apply(*_binary_values("sub", a, b)[:2])


def mul(a: Operand, b: Operand) -> Tensor:
    return Mul.apply(*_binary_values("mul", a, b)[:2])


def div(a: Operand, b: Operand) -> Tensor:
    return Div.apply(*_binary_values("div", a, b)[:2])


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
    return V.wrap(np.zeros(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape, dtype))


def ones(*shape: int, dtype=np.float32) -> Tensor:
    return V.wrap(np.ones(shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape, dtype))


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
    if result.shape != x.shape:
        raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    if result.dtype.kind == "f" and x.dtype.kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {x.type()[11:-6]}")
    np.copyto(_np(x), _np(result), casting="unsafe")
    x._bump_version()
    if recording:
        x._set_history(result.grad_fn, result._output_nr)
    return x
