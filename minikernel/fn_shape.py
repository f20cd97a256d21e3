"""Reductions, matmul and views as Functions: forward with numpy, backward with ``minikernel.functions``.

Views (view/reshape, permute, transpose, expand, indexing) share memory with their
input, as in PyTorch. The formulas that are exercises (3.5 matmul, 3.6 max) are in
``derivatives.py``.
"""
from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Optional

import numpy as np

from . import derivatives as D
from . import functions as F
from . import values as V
from .autograd import Function
from .fn_pointwise import _reduce_to
from .ops import _C_NAMES, _SCALAR_NAMES
from .tensor import Tensor, _wrap_dim

_np = V.array


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
        grad = F.reshape(grad, tuple(kept))
    return F.expand(grad, tuple(shape))


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
                               f"point or complex dtype. Got: {_SCALAR_NAMES[x.dtype]}")
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, _dims(dim, x.ndim), keepdim
        ctx.count = int(np.prod([x.shape[d] for d in ctx.dims])) if x.ndim else 1
        with np.errstate(invalid="ignore", divide="ignore"):
            return V.wrap(np.mean(_np(x), axis=ctx.dims, keepdims=keepdim), x.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return F.div(_unsqueeze_to(grad, ctx.shape, ctx.dims, ctx.keepdim), ctx.count), None, None


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
        return F.reshape(grad, ctx.shape), None, None


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
        return F.permute(grad, ctx.inverse), None


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
        return F.index(grad, ctx.key), None, None
