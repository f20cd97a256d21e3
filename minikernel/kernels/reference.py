"""The numpy reference backend: what a kernel computes, written with numpy.

The dispatcher's CPU backend runs your chapter 02 kernels. Where one is still an
untouched stub, or a dtype it does not take (int32, bool) arrives, the CPU backend
computes with this module instead, so the chapters after 02 (autograd, modules,
optimizers, ...) run whether or not chapter 02 is finished. Only the final loop
differs: the checks, the result dtype and the output's strides were decided by
``minikernel/aten/tensor_iterator.py`` before either runs, so both give the same shapes, errors and
layouts.

Each function has the signature of its counterpart in ``launch.py`` and writes into
``out`` (inputs already broadcast to ``out``'s shape). Ops that have no chapter 02
kernel (``pow``, ``tanh``, comparisons, ``where``, ``prod``) run here only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from .scalar_ops import ADD, DIV, EXP, LOG, MAX, MUL, NEG, RELU, SIGMOID, SUB, SUM

if TYPE_CHECKING:
    from ..tensor import Tensor


def _relu(x: np.ndarray) -> np.ndarray:
    return np.where((x > 0) | np.isnan(x), x, np.zeros_like(x))  # NaN stays NaN, as in torch.relu


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


UNARY: dict[int, Callable] = {NEG: np.negative, EXP: np.exp, LOG: np.log, RELU: _relu, SIGMOID: _sigmoid}
BINARY: dict[int, Callable] = {ADD: np.add, SUB: np.subtract, MUL: np.multiply, DIV: np.true_divide}


def _host(t: "Tensor") -> np.ndarray:
    if t.is_cuda:
        raise RuntimeError("minikernel's numpy reference backend runs on the CPU: your chapter 02 GPU kernel "
                           "is needed for cuda tensors (or move them with .cpu())")
    return t._numpy_view()


def _write(out: "Tensor", values: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        _host(out)[...] = values


def map_(op: int, out: "Tensor", a: "Tensor") -> None:
    """``out[i] = op(a[i])``; a COPY op (any code not in ``UNARY``) copies."""
    with np.errstate(all="ignore"):
        x = _host(a).astype(out.dtype, copy=False)
        _write(out, UNARY[op](x) if op in UNARY else x)


def zip_(op: int, out: "Tensor", a: "Tensor", b: "Tensor") -> None:
    """``out[i] = op(a[i], b[i])``, computed in ``out``'s dtype."""
    with np.errstate(all="ignore"):
        _write(out, BINARY[op](_host(a).astype(out.dtype, copy=False), _host(b).astype(out.dtype, copy=False)))


def reduce_(op: int, identity, out: "Tensor", a: "Tensor", dim: int) -> None:
    """``out`` (``a``'s shape, 1 at ``dim``) = the sum or maximum along ``dim`` (NaN wins a max)."""
    x = _host(a).reshape(1) if a.ndim == 0 else _host(a)
    if op == SUM:
        _write(out, np.sum(x, axis=dim, keepdims=True, dtype=out.dtype).reshape(out.shape))
    elif op == MAX:
        _write(out, np.max(x, axis=dim, keepdims=True, initial=identity).reshape(out.shape))
    else:
        raise ValueError(f"unknown reduction op {op}")


def matmul_(out: "Tensor", a: "Tensor", b: "Tensor") -> None:
    """``out = a @ b`` over broadcast batch dimensions."""
    _write(out, np.matmul(_host(a), _host(b)))


def apply(fn: Callable, out: "Tensor", *inputs: "Tensor") -> None:
    """``out = fn(*inputs)`` for an op with no chapter 02 kernel (inputs broadcast to ``out``)."""
    with np.errstate(all="ignore"):
        _write(out, fn(*(_host(t) for t in inputs)))
