"""Comparisons and ``where`` (ATen's ``TensorCompare.cpp``; ``gt``, ``lt``, ``ge``, ``le``,
``eq`` are ``BinaryOps.cpp``'s there). None has a chapter 02 kernel: each takes
``tensor_iterator.py``'s steps — device, result dtype, broadcast check (one set of errors
with the kernel ops), output allocation with PyTorch's strides — and then computes on the
numpy reference backend (``tensor_iterator.reference_pointwise``), CPU only.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..tensor import Tensor, bool_
from .tensor_iterator import Operand, reference_pointwise, result_type


def where(condition: Tensor, a: Operand, b: Operand) -> Tensor:
    """``condition ? a : b`` element-wise, broadcast. Matches ``torch.where``."""
    if not isinstance(condition, Tensor) or condition.dtype != bool_:
        raise TypeError("where(): condition must be a bool minikernel Tensor (e.g. x > 0)")
    dtype = result_type(a, b)
    return reference_pointwise("where", lambda c, x, y: np.where(c.astype(bool), x, y), dtype, condition, a, b,
                      compute_dtype=dtype)


def _compare(name: str, fn: Callable, a: Operand, b: Operand) -> Tensor:
    return reference_pointwise(name, fn, bool_, a, b, compute_dtype=result_type(a, b))


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
