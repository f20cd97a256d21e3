"""Tensor operations with no chapter 02 kernel: ``pow``, ``tanh``, ``where``, the
comparisons and ``prod``. They follow ``minikernel.ops``'s steps — device, result
dtype, broadcast check (one set of errors with the kernel ops), output allocation
with PyTorch's strides — and then compute on the numpy reference backend
(``kernels/reference.py``), CPU only.
"""
from __future__ import annotations

import builtins
from typing import Callable, Optional

import numpy as np

from . import shape_rules
from .join_ops import cat, stack  # noqa: F401 - aten::cat, aten::stack
from .kernels import layout, reference
from .ops import Operand, _check_operand, _computed_header, device_of, empty, result_type, scalar_tensor, stride0_view
from .tensor import Tensor, _wrap_dim, bool_, float32, int64


def _pointwise(name: str, fn: Callable, dtype: np.dtype, *operands: Operand, compute_dtype=None) -> Tensor:
    """Broadcast ``operands``, allocate the result (``dtype``), then ``fn`` on the reference backend."""
    for x in operands:
        _check_operand(x, name)
    tensors = [x for x in operands if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{name}(): at least one operand must be a minikernel Tensor")
    where = device_of(name, *tensors)
    inputs = [x if isinstance(x, Tensor) else scalar_tensor(x, compute_dtype or dtype, where) for x in operands]
    shape: tuple = ()
    for t in inputs:  # the library's rule (no exercise of yours runs here)
        shape = tuple(shape_rules.broadcast_shape(shape, t.shape))
    headers = [_computed_header(t, t.dtype) for t in inputs]
    out = empty(shape, layout.output_strides(shape, headers), dtype, where)
    cast = compute_dtype or dtype
    reference.apply(lambda *xs: fn(*(x.astype(cast, copy=False) for x in xs)), out,
                    *(stride0_view(t, shape) for t in inputs))
    return out


def pow(base: Operand, exponent: Operand) -> Tensor:  # noqa: A001 - torch's name
    """``base ** exponent``. Matches ``torch.pow``."""
    return _pointwise("pow", np.power, result_type(base, exponent), base, exponent)


def tanh(a: Tensor) -> Tensor:
    """Matches ``torch.tanh`` (float32 for integer input)."""
    dtype = a.dtype if a.dtype.kind == "f" else float32
    return _pointwise("tanh", np.tanh, dtype, a)


def sqrt(a: Tensor) -> Tensor:
    """Matches ``torch.sqrt`` (float32 for integer input; nan below 0, without a warning)."""
    def root(x):
        with np.errstate(invalid="ignore"):
            return np.sqrt(x)

    return _pointwise("sqrt", root, a.dtype if a.dtype.kind == "f" else float32, a)


def where(condition: Tensor, a: Operand, b: Operand) -> Tensor:
    """``condition ? a : b`` element-wise, broadcast. Matches ``torch.where``."""
    if not isinstance(condition, Tensor) or condition.dtype != bool_:
        raise TypeError("where(): condition must be a bool minikernel Tensor (e.g. x > 0)")
    dtype = result_type(a, b)
    return _pointwise("where", lambda c, x, y: np.where(c.astype(bool), x, y), dtype, condition, a, b,
                      compute_dtype=dtype)


def _compare(name: str, fn: Callable, a: Operand, b: Operand) -> Tensor:
    return _pointwise(name, fn, bool_, a, b, compute_dtype=result_type(a, b))


def gt(a: Operand, b: Operand) -> Tensor:
    return _compare("gt", np.greater, a, b)


def lt(a: Operand, b: Operand) -> Tensor:
    return _compare("lt", np.less, a, b)


def ge(a: Operand, b: Operand) -> Tensor:
    return _compare("ge", np.greater_equal, a, b)


def le(a: Operand, b: Operand) -> Tensor:
    return _compare("le", np.less_equal, a, b)


def eq(a: Operand, b: Operand) -> Tensor:
    return _compare("eq", np.equal, a, b)


def prod(a: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Product of all elements, or along ``dim``. Matches ``torch.prod`` (integers as int64)."""
    _check_operand(a, "prod")
    where = device_of("prod", a)
    dtype = a.dtype if a.dtype.kind == "f" else int64
    if dim is None:
        out = empty((), (), dtype, where)
        reference.apply(lambda x: np.prod(x, dtype=dtype), out, a)
        return out
    d = _wrap_dim(int(dim), builtins.max(a.ndim, 1))
    shape = a.shape if not a.ndim else tuple(n for i, n in enumerate(a.shape) if i != d or keepdim)
    shape = tuple(1 if (i == d and keepdim) else n for i, n in enumerate(shape)) if keepdim else shape
    out = empty(shape, layout.contiguous_strides(shape), dtype, where)
    reference.apply(lambda x: np.prod(x.reshape(1) if x.ndim == 0 else x, axis=d, keepdims=keepdim and a.ndim > 0,
                                      dtype=dtype).reshape(shape), out, a)
    return out


def index_tensor(a: Tensor, indices: tuple) -> Tensor:
    """``a[indices]`` with integer tensors or boolean masks among ``indices`` (checked by the
    caller): a copy of the picked elements, numpy's rules for where their dims go. Matches
    ``torch.ops.aten.index.Tensor`` as ``Tensor.__getitem__`` uses it."""
    _check_operand(a, "index")
    device_of("index", a)
    key = tuple(k.to_numpy() if isinstance(k, Tensor) else k for k in indices)
    if a.numel() == 0 and not any(isinstance(k, np.ndarray) and k.dtype == bool for k in key):
        # the result is empty too: torch reads nothing, so it checks no index into a dim of size > 0
        key = tuple(np.clip(k, -n, n - 1) if isinstance(k, np.ndarray) and n > 0 else k for k, n in zip(key, a.shape))
    picked = np.ascontiguousarray(a.to_numpy()[key])
    out = empty(picked.shape, layout.contiguous_strides(picked.shape), a.dtype, "cpu")
    out._numpy_view()[...] = picked
    return out
