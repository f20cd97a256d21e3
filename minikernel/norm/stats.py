"""Exercise 5.1: variance by two passes — ``torch.var``, ``torch.std`` and friends.

The sample variance of ``n`` values along the reduced dimensions::

    mean = Σ x_i / n                       (pass 1)
    var  = Σ (x_i - mean)² / (n - c)       (pass 2; c = ``correction``)

``correction=1`` (torch's default for ``var``/``std``) is Bessel's correction: the
unbiased estimate of the population variance from a sample. ``correction=0`` is
the biased, "population" variance that LayerNorm and BatchNorm normalize with.
When ``n - c <= 0`` the divisor is clamped to 0 (so the result is inf or nan) and
PyTorch warns.

Your part is the arithmetic (``two_pass_var``, on a numpy array). Everything
around it is complete here and works like PyTorch: argument forms
(``var(x, dim, unbiased, keepdim)`` and ``var(x, dim, correction=..., keepdim=...)``),
dimension checks, dtype checks, the degrees-of-freedom warning, and the
``std``/``var_mean``/``std_mean`` variants.
"""
from __future__ import annotations

import math
import warnings
from typing import Optional, Sequence, Union

import numpy as np

from ..course.exercise import exercise
from ..kernels.layout import contiguous_strides
from ..tensor import Tensor, _wrap_dim

Dims = tuple[int, ...]  #: reduced dimensions: non-negative, sorted, unique
DimArg = Union[None, int, Sequence[int]]

__all__ = ["two_pass_var", "var", "std", "var_mean", "std_mean", "reduced_dims"]


@exercise("5.1")
def two_pass_var(x: np.ndarray, dims: Dims, correction: float, keepdim: bool) -> np.ndarray:
    """Variance of ``x`` over the dimensions ``dims``, by two passes over the data.

    ``n`` is the number of elements each result summarizes: the product of
    ``x.shape[d]`` for ``d`` in ``dims`` (1 when ``dims`` is empty: a 0-d ``x``).

    1. ``mean = x.sum(axis=dims, keepdims=True) / n``;
    2. ``var = ((x - mean) ** 2).sum(axis=dims, keepdims=keepdim) / max(0, n - correction)``.

    Keep ``x``'s dtype (a Python number does not promote a float32 array). Dividing
    by a clamped 0 gives inf (or nan for 0/0), as in PyTorch; the caller has already
    silenced numpy's warnings and issued PyTorch's. Do not call ``np.var``: the
    point is the two passes, and why the second one does not lose precision.

    ``dims`` arrives checked: non-negative, sorted, no repeats, and every dimension
    when the caller asked for all.

    Matches: ``torch.var(x, dim=dims, correction=correction, keepdim=keepdim)``.
    """
    # TODO(5.1): ≈5 lines
    raise NotImplementedError("exercise 5.1 (two_pass_var) is not implemented yet")


# ---------------------------------------------------------------------- plumbing
def reduced_dims(dim: DimArg, ndim: int) -> Dims:
    """``dim`` as PyTorch reads it: None or ``()`` = every dimension; negatives wrap.

    Raises IndexError (out of range) and RuntimeError (a repeated dimension) with
    PyTorch's messages.
    """
    if ndim == 0:  # a 0-d tensor accepts dim 0 or -1, and has nothing to reduce
        for d in ([] if dim is None else [dim] if isinstance(dim, int) else list(dim)):
            _wrap_dim(int(d), 0)
        return ()
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return (_wrap_dim(int(dim), ndim),)
    try:
        given = [int(d) for d in dim]
    except TypeError:
        raise TypeError(f"dim must be None, an int or a sequence of ints, got {dim!r}") from None
    if not given:
        return tuple(range(ndim))
    wrapped = [_wrap_dim(d, ndim) for d in given]
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return tuple(sorted(wrapped))


def _resolve(dim, unbiased: Optional[bool], correction: Optional[float]) -> tuple[DimArg, float]:
    """PyTorch's overloads: ``var(x, True)``, ``var(x, dim, unbiased)``, ``var(x, dim, correction=c)``."""
    if isinstance(dim, bool):  # var(x, False): the legacy (input, unbiased) form
        if unbiased is not None:
            raise TypeError("var(): got unbiased twice (as the second argument and by keyword)")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError("var(): pass either unbiased= (legacy) or correction=, not both; "
                        "unbiased=True is correction=1, unbiased=False is correction=0")
    if correction is None:
        correction = 0 if unbiased is False else 1
    if isinstance(correction, bool) or not isinstance(correction, (int, float, np.integer, np.floating)):
        raise TypeError(f"correction must be a number, got {correction!r}")
    return dim, correction


def _host_values(name: str, input: Tensor) -> np.ndarray:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}() expects a minikernel Tensor, got {type(input).__name__}; "
                        "wrap a torch tensor with Tensor.from_torch(t)")
    if input.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return input.cpu()._numpy_view()  # statistics run on the host; a cuda result is copied back


def _as_tensor(values: np.ndarray, like: Tensor) -> Tensor:
    values = np.array(values, dtype=like.dtype, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    out = Tensor(values.reshape(-1), values.shape, contiguous_strides(values.shape), 0)
    return out.to(like.device)


def _variance(name: str, input: Tensor, dim, unbiased, keepdim: bool, correction) -> tuple[np.ndarray, Dims, int]:
    x = _host_values(name, input)
    dim, correction = _resolve(dim, unbiased, correction)
    dims = reduced_dims(dim, input.ndim)
    n = math.prod(input.shape[d] for d in dims)
    if n - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.asarray(two_pass_var(x, dims, correction, bool(keepdim)))
    expected = tuple(1 if d in dims else s for d, s in enumerate(input.shape)) if keepdim else tuple(
        s for d, s in enumerate(input.shape) if d not in dims)
    if result.shape != expected:
        raise RuntimeError(f"exercise 5.1 returned shape {result.shape}; torch.{name} gives {expected} "
                           f"(dims={dims}, keepdim={bool(keepdim)})")
    return result, dims, n


def _mean(input: Tensor, dims: Dims, keepdim: bool) -> np.ndarray:
    """The mean over ``dims`` (nan for an empty reduction, without numpy's warning)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return input.cpu()._numpy_view().mean(axis=dims, keepdims=bool(keepdim), dtype=input.dtype)


def var(input: Tensor, dim: DimArg = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
        correction: Optional[float] = None) -> Tensor:
    """Variance over ``dim`` (default: all elements) with ``correction`` (default 1: unbiased).

    Args:
        input (Tensor): a floating-point minikernel Tensor.
        dim (int or sequence of ints, optional): dimensions to reduce. Default: all.
        unbiased (bool, optional): legacy spelling: True is ``correction=1``, False ``0``.
        keepdim (bool): keep reduced dimensions with size 1. Default: ``False``
        correction (number, optional): the divisor is ``max(0, n - correction)``. Default: ``1``

    Example::

        >>> var(Tensor.from_torch(torch.tensor([1.0, 2.0, 3.0, 4.0])))              # 5/3
        >>> var(Tensor.from_torch(torch.ones(2, 3)), 1, correction=0, keepdim=True)  # shape (2, 1)

    Matches: ``torch.var(input, dim, correction=correction, keepdim=keepdim)``.
    """
    result, _, _ = _variance("var", input, dim, unbiased, keepdim, correction)
    return _as_tensor(result, input)


def std(input: Tensor, dim: DimArg = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
        correction: Optional[float] = None) -> Tensor:
    """Standard deviation: ``sqrt(var(...))``, same arguments. Matches ``torch.std``."""
    result, _, _ = _variance("std", input, dim, unbiased, keepdim, correction)
    return _as_tensor(np.sqrt(result), input)


def var_mean(input: Tensor, dim: DimArg = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
             correction: Optional[float] = None) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` in one call, same arguments as ``var``. Matches ``torch.var_mean``."""
    result, dims, _ = _variance("var_mean", input, dim, unbiased, keepdim, correction)
    mean = _mean(input, dims, keepdim)
    return _as_tensor(result, input), _as_tensor(mean, input)


def std_mean(input: Tensor, dim: DimArg = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
             correction: Optional[float] = None) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` in one call, same arguments as ``std``. Matches ``torch.std_mean``."""
    result, dims, _ = _variance("std_mean", input, dim, unbiased, keepdim, correction)
    mean = _mean(input, dims, keepdim)
    return _as_tensor(np.sqrt(result), input), _as_tensor(mean, input)
