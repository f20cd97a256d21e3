"""Reductions (sum, mean, max, amax, prod): each Function's forward (the backend, ``V.compute``) and backward side by side,
then the functional forms. The formulas that are exercises (3.6 max) are in ``derivatives.py``.
"""
from __future__ import annotations

import builtins
from typing import Optional

import numpy as np

from ..aten import reduce_ops
from ..tensor import Tensor, _wrap_dim
from . import derivatives as D, values as V
from .function import Function
from .grad_mode import is_grad_enabled
from .pointwise import div, eq, mul, where
from .views import expand, permute, reshape

_np = V.array


# --------------------------------------------------------------- reductions
def _dims(dim, ndim: int) -> tuple[int, ...]:
    """The reduced dims, wrapped and sorted; ``None`` or an empty list reduces all (torch's rule)."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
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
        return V.compute("sum", x, dim, keepdim)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return _unsqueeze_to(grad, ctx.shape, ctx.dims, ctx.keepdim), None, None


class SumDim(Sum):
    _torch_name = "SumBackward1"


class Mean(Function):
    _torch_name = "MeanBackward0"
    @staticmethod
    def forward(ctx, x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        result = V.compute("mean", x, dim, keepdim)
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, _dims(dim, x.ndim), keepdim
        ctx.count = int(np.prod([x.shape[d] for d in ctx.dims])) if x.ndim else 1
        return result

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
        result = V.compute("max", x)
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, grad: Tensor):
        return D.max_backward(grad, *ctx.saved_tensors)


MaxResult = reduce_ops.MaxResult  # torch.return_types.max


class MaxDim(Function):
    """``x.max(dim)``: (values, indices); the gradient goes to the first maximum's index."""
    _torch_name = "MaxBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, dim: int, keepdim: bool = False):
        values, idx = V.compute("max", x, dim, keepdim)
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, _wrap_dim(dim, builtins.max(x.ndim, 1)), keepdim
        ctx.save_for_backward(idx)
        return values, idx

    @staticmethod
    def backward(ctx, grad: Tensor, _grad_indices: Optional[Tensor]):
        (indices,) = ctx.saved_tensors
        return D.max_dim_backward(grad, indices, ctx.shape, ctx.dim, ctx.keepdim), None, None


class Amax(Function):
    """``x.amax(dim, keepdim)``: the largest values over ``dim`` (all dims for ``()``); ties
    share each gradient evenly, as for ``x.max()`` (torch's ``scale_grad_by_count``)."""
    _torch_name = "AmaxBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, dim=(), keepdim: bool = False) -> Tensor:
        result = V.compute("amax", x, dim, keepdim)
        ctx.dims, ctx.keepdim = _dims(dim, x.ndim), keepdim
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, result = ctx.saved_tensors
        shape = tuple(x.shape)
        at_max = mul(eq(x, _unsqueeze_to(result, shape, ctx.dims, ctx.keepdim)), 1.0)  # 1.0 where x ties the max
        ties = sum(at_max, ctx.dims, True) if ctx.dims else at_max  # how many share each max
        share = div(mul(_unsqueeze_to(grad, shape, ctx.dims, ctx.keepdim), at_max), expand(ties, shape))
        return share, None, None


# ------------------------------------------------------- functional forms
def sum(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001 - torch's name
    return (Sum if dim is None else SumDim).apply(x, dim, keepdim)


def mean(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return (Mean if dim is None else MeanDim).apply(x, dim, keepdim)


def amax(x: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    return Amax.apply(x, dim, keepdim)


def max(x: Tensor, dim: Optional[int] = None, keepdim: bool = False):  # noqa: A001 - torch's name
    """``x.max()`` -> a 0-d tensor; ``x.max(dim)`` -> ``(values, indices)`` like torch."""
    if dim is None:
        return Max.apply(x)
    return MaxResult(*MaxDim.apply(x, dim, keepdim))


class Prod(Function):
    """``x.prod()`` / ``x.prod(dim, keepdim)``. The gradient of element i is ``grad`` times the
    product of the *other* elements of its group: ``result / x_i`` when the input has no 0
    (``grad * result / x`` would give nan at a 0); with zeros, the product of the others is
    computed as such (torch's ``prod_backward`` handles zeros too): by running products when
    nothing records the backward, else from differentiable operations, so that
    ``create_graph=True`` gives right second derivatives."""

    _torch_name = "ProdBackward0"

    @staticmethod
    def forward(ctx, x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
        ctx.keepdim = keepdim
        ctx.dims = tuple(range(x.ndim)) if dim is None else (_wrap_dim(dim, builtins.max(x.ndim, 1)),)
        result = V.compute("prod", x, dim, keepdim)
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, result = ctx.saved_tensors
        if x.ndim == 0:
            return grad, None, None
        shape = tuple(x.shape)
        g = _unsqueeze_to(grad, shape, ctx.dims, ctx.keepdim)
        if not bool(_np(eq(x, 0.0)).any()):
            return mul(g, div(_unsqueeze_to(result, shape, ctx.dims, ctx.keepdim), x)), None, None
        if not is_grad_enabled():  # nothing records this backward: prefix and suffix products, O(n)
            return mul(g, V.wrap(_others_by_scans(_np(x), ctx.dims), x.dtype)), None, None
        return mul(g, _product_of_others(x, ctx.dims)), None, None


#: Most elements ``_product_of_others`` may build (each group of n elements takes n * n).
OTHERS_LIMIT = 1 << 24


def _others_by_scans(x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """The product of the others for each element, as values: the product of the elements
    before it times the product of those after it (two running products, what torch's
    ``prod_backward`` computes with ``cumprod``); exact with zeros."""
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = np.transpose(x, [*kept, *dims]).astype(np.float64)
    flat = moved.reshape(*moved.shape[:len(kept)], -1)
    ones = np.ones_like(flat[..., :1])
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat, -1)[..., :-1]], -1), -1), -1)
    return np.transpose((before * after).reshape(moved.shape), np.argsort([*kept, *dims]))


def _product_of_others(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    """For each element, the product of the other elements of its group (the elements
    that share its position outside ``dims``), exact when some of them are 0, recorded
    (``create_graph=True``: its own derivative at two zeros is the product of the rest).

    The group is moved to the last axis and repeated n times (row i of an n x n block
    holds the group with its i-th element replaced by 1), then multiplied along the
    last axis: n * n values per group, all through differentiable operations."""
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = permute(x, [*kept, *dims])  # the reduced dims last, in order
    outer = tuple(x.shape[d] for d in kept)
    n = int(np.prod([x.shape[d] for d in dims]))
    if n * n * int(np.prod(outer)) > OTHERS_LIMIT:
        raise RuntimeError(f"prod backward: the input has zeros and groups of {n} elements; the product of the "
                           f"others would take {n} x {n} values per group (over {OTHERS_LIMIT} in all). Compute "
                           f"the product on smaller groups (prod over one dim at a time), or without zeros")
    rows = expand(reshape(moved, (*outer, 1, n)), (*outer, n, n))
    own = V.wrap(np.eye(n, dtype=bool))  # row i, column i: the element itself
    others = prod(where(own, 1.0, rows), -1)  # (*outer, n)
    back = reshape(others, (*outer, *(x.shape[d] for d in dims)))
    inverse = np.argsort([*kept, *dims])
    return permute(back, [int(i) for i in inverse])


class ProdDim(Prod):
    _torch_name = "ProdBackward1"


def prod(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return (Prod if dim is None else ProdDim).apply(x, dim, keepdim)
