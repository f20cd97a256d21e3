"""Element-wise operators of one input (ATen's ``UnaryOps.cpp``).

The chapter 02 kernel path: ``neg``, ``exp``, ``log``, ``relu``, ``sigmoid`` (and the
``copy`` a contiguous copy uses) take ``tensor_iterator.py``'s steps and run your map
kernel (exercises 2.2, 2.6). The numpy reference path: ``tanh`` and ``sqrt`` have no
chapter 02 kernel; they take the same steps and compute with numpy
(``tensor_iterator.reference_pointwise``, CPU only).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..kernels import launch, layout
from ..kernels.scalar_ops import UNARY
from ..tensor import Tensor, float32
from .tensor_iterator import (
    _check_dtype,
    _check_operand,
    _computed_header,
    _refuse_out_with_grad,
    check_out,
    device_of,
    empty,
    reference_pointwise,
)

_FLOAT_RESULT = ("exp", "log", "sigmoid")  # integer inputs give float32, like torch


# ------------------------------------------------ chapter 02's map kernel
def unary(name: str, a: Tensor, out: Optional[Tensor] = None, inplace: bool = False) -> Tensor:
    """``neg``, ``exp``, ``log``, ``relu``, ``sigmoid`` (and ``copy``): one input, the map kernel."""
    _check_operand(a, name)
    if out is not None:
        _refuse_out_with_grad(name, out, a, inplace=inplace)
    where = device_of(name, a, out)
    _check_dtype(name, where, a.dtype)
    dtype = float32 if (name in _FLOAT_RESULT and a.dtype.kind != "f") else a.dtype
    launch.check_runnable(where, "map")
    if out is None:
        out = empty(a.shape, layout.output_strides(a.shape, [_computed_header(a, dtype)]), dtype, where)
    else:
        check_out(name, out, a.shape, dtype, where, [a], inplace)
    launch.map_(UNARY[name], out, a)
    return out


def contiguous(a: Tensor) -> Tensor:
    """``a`` if it is row-major contiguous, else a contiguous copy made by the map kernel."""
    if layout.is_contiguous(a.shape, a.stride()):
        return a
    return unary("copy", a, out=empty(a.shape, layout.contiguous_strides(a.shape), a.dtype, a.device.type))


def neg(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """``-a``. Matches ``torch.neg(a, out=out)``."""
    return unary("neg", a, out)


def exp(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """``e**a`` (float32 for int64 input). Matches ``torch.exp(a, out=out)``."""
    return unary("exp", a, out)


def log(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """Natural log, nan below 0 (float32 for int64 input). Matches ``torch.log(a, out=out)``."""
    return unary("log", a, out)


def relu(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """``max(a, 0)``, NaN kept. Matches ``torch.relu(a)`` (torch has no out= for relu; minikernel does)."""
    return unary("relu", a, out)


def sigmoid(a: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """``1 / (1 + e**-a)`` (float32 for int64 input). Matches ``torch.sigmoid(a, out=out)``."""
    return unary("sigmoid", a, out)


# ------------------------------------------------ the numpy reference backend
def tanh(a: Tensor) -> Tensor:
    """Matches ``torch.tanh`` (float32 for integer input)."""
    dtype = a.dtype if a.dtype.kind == "f" else float32
    return reference_pointwise("tanh", np.tanh, dtype, a)


def sqrt(a: Tensor) -> Tensor:
    """Matches ``torch.sqrt`` (float32 for integer input; nan below 0, without a warning)."""
    def root(x):
        with np.errstate(invalid="ignore"):
            return np.sqrt(x)

    return reference_pointwise("sqrt", root, a.dtype if a.dtype.kind == "f" else float32, a)
