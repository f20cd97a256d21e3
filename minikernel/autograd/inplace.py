"""In-place operations on the autograd path: ``x.mul_(2)``, ``x += y`` when autograd is involved.

The new values are computed out of place, written into ``x``'s memory, and ``x``'s
version counter is bumped; while recording, ``x`` takes the new node as its
``grad_fn`` (PyTorch "rebases" its history), so anything that saved the old ``x``
for backward finds its version changed and refuses to run.
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np

from ..ops import check_out
from ..tensor import Tensor
from . import values as V
from .grad_mode import is_grad_enabled
from .pointwise import add, div, exp, log, mul, neg, pow, relu, sigmoid, sub, tanh

Operand = Union[Tensor, int, float]

_INPLACE = {"add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "exp": exp, "log": log,
            "relu": relu, "sigmoid": sigmoid, "tanh": tanh, "pow": pow}


def inplace(name: str, x: Tensor, other: Optional[Operand] = None) -> Tensor:
    """``x.<name>_(other)``: compute out of place, write the values into ``x``, bump its version."""
    args = (x,) if other is None else (x, other)
    recording = is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args)
    if recording and x.is_leaf and x.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    source = x._alias() if recording else x
    result = _INPLACE[name](*((source,) if other is None else (source, other)))
    check_out(f"{name}_", x, result.shape, result.dtype, "cpu", [source], inplace=True)  # torch's refusals
    np.copyto(V.array(x), V.array(result), casting="unsafe")
    x._bump_version()
    if recording:
        x._set_history(result.grad_fn, result._output_nr)
    return x
