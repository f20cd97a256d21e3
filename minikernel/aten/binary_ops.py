"""Element-wise operators of two inputs, broadcast together (ATen's ``BinaryOps.cpp``).

The chapter 02 kernel path: ``add``, ``sub``, ``mul``, ``div`` take ``tensor_iterator.py``'s
steps (promotion, broadcasting, ``out=`` checks, allocation) and run your zip kernel
(exercises 2.3, 2.7). The numpy reference path: ``pow`` has no chapter 02 kernel; it takes
the same steps and computes with numpy (``tensor_iterator.reference_pointwise``, CPU only).
The comparisons and ``where`` are ``tensor_compare.py``'s.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..kernels import launch, layout
from ..kernels.scalar_ops import BINARY
from ..tensor import Tensor, float32
from .memory_overlap import in_kernel_order, reads_what_it_writes
from .tensor_iterator import (
    Operand,
    _check_dtype,
    _check_operand,
    _computed_header,
    _refuse_out_with_grad,
    broadcast_shapes,
    broadcast_to,
    check_out,
    device_of,
    empty,
    reference_pointwise,
    result_type,
    scalar_tensor,
)


# ------------------------------------------------ chapter 02's zip kernel
def binary(name: str, a: Operand, b: Operand, out: Optional[Tensor] = None, inplace: bool = False) -> Tensor:
    """``add``, ``sub``, ``mul``, ``div``: two inputs broadcast together, the zip kernel."""
    _check_operand(a, name)
    _check_operand(b, name)
    tensors = [x for x in (a, b) if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{name}(): at least one operand must be a minikernel Tensor")
    if out is not None:
        _refuse_out_with_grad(name, out, a, b, inplace=inplace)
    where = device_of(name, *tensors, out)
    for t in tensors:
        _check_dtype(name, where, t.dtype)
    dtype = result_type(a, b)
    if name == "div" and dtype.kind != "f":
        dtype = float32  # true division: integers give the default float dtype
    launch.check_runnable(where, "zip")
    a = a if isinstance(a, Tensor) else scalar_tensor(a, dtype, where)
    b = b if isinstance(b, Tensor) else scalar_tensor(b, dtype, where)
    shape = broadcast_shapes(where, a.shape, b.shape)
    if out is None:
        inputs = [_computed_header(a, dtype), _computed_header(b, dtype)]
        out = empty(shape, layout.output_strides(shape, inputs), dtype, where)
    else:
        check_out(name, out, shape, dtype, where, [a, b], inplace)
    if inplace and where == "cpu" and reads_what_it_writes(out, [b]):
        out._numpy_view()[...] = in_kernel_order(UFUNCS[name], out, b)  # torch's kernel reads what it wrote
        return out
    launch.zip_(BINARY[name], out, broadcast_to(a, shape, where), broadcast_to(b, shape, where))
    return out


#: the zip kernel's ops as numpy computes them, for ``memory_overlap.in_kernel_order``
UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


def add(a: Operand, b: Operand, *, out: Optional[Tensor] = None) -> Tensor:
    """``a + b`` with broadcasting and type promotion. Matches ``torch.add(a, b, out=out)``."""
    return binary("add", a, b, out)


def sub(a: Operand, b: Operand, *, out: Optional[Tensor] = None) -> Tensor:
    """``a - b``. Matches ``torch.sub(a, b, out=out)``."""
    return binary("sub", a, b, out)


def mul(a: Operand, b: Operand, *, out: Optional[Tensor] = None) -> Tensor:
    """``a * b``. Matches ``torch.mul(a, b, out=out)``."""
    return binary("mul", a, b, out)


def div(a: Operand, b: Operand, *, out: Optional[Tensor] = None) -> Tensor:
    """``a / b``, true division (float32 for two int64 inputs). Matches ``torch.div(a, b, out=out)``."""
    return binary("div", a, b, out)


# ------------------------------------------------ the numpy reference backend
def pow(base: Operand, exponent: Operand) -> Tensor:  # noqa: A001 - torch's name
    """``base ** exponent``. Matches ``torch.pow``."""
    return reference_pointwise("pow", np.power, result_type(base, exponent), base, exponent)
