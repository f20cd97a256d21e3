"""What a kernel computes per element: the scalar functions behind map, zip and reduce.

A kernel is the *loop*; these are the *bodies*. Each kernel takes an integer op
code and calls ``apply_unary(op, x)``, ``apply_binary(op, x, y)`` or
``combine(op, acc, x)``, compiled for the kernel's path (numba ``njit`` for the CPU,
``cuda.jit(device=True)`` for the GPU). One compiled kernel then serves every
op: numba caches it on disk once instead of once per function.

Semantics follow PyTorch's: no exceptions (``log(-1)`` is nan, ``1/0`` is inf),
NaN propagates through ``relu`` and ``max``.
"""
from __future__ import annotations

import math

import numpy as np

from ..device import SIMULATOR

# unary ops (map)
NEG, EXP, LOG, RELU, SIGMOID, COPY = 0, 1, 2, 3, 4, 5
# binary ops (zip)
ADD, SUB, MUL, DIV = 0, 1, 2, 3
# reductions (reduce)
SUM, MAX = 0, 1

UNARY = {"neg": NEG, "exp": EXP, "log": LOG, "relu": RELU, "sigmoid": SIGMOID, "copy": COPY}
BINARY = {"add": ADD, "sub": SUB, "mul": MUL, "div": DIV}
REDUCE = {"sum": SUM, "max": MAX}

# Compiled code follows C: exp overflows to inf, log(-1) is nan. The simulator runs
# this file as plain Python, where math.exp/math.log raise instead; numpy's scalar
# functions give the compiled answers there (numba-cuda has no np.exp on the GPU).
if SIMULATOR:
    _exp, _log = np.exp, np.log
else:
    _exp, _log = math.exp, math.log


def apply_unary(op: int, x):
    """``-x``, ``exp(x)``, ``log(x)``, ``relu(x)``, ``sigmoid(x)`` or ``x`` itself (COPY)."""
    if op == NEG:
        return -x
    if op == EXP:
        return _exp(x)
    if op == LOG:
        return _log(x)
    if op == RELU:
        return x if (x > 0 or x != x) else 0  # x != x: NaN stays NaN, as in torch.relu
    if op == SIGMOID:
        return 1.0 / (1.0 + _exp(-x))
    return x


def apply_binary(op: int, x, y):
    """``x + y``, ``x - y``, ``x * y`` or ``x / y`` (true division)."""
    if op == ADD:
        return x + y
    if op == SUB:
        return x - y
    if op == MUL:
        return x * y
    return x / y


def combine(op: int, acc, x):
    """One step of a reduction: ``acc + x`` (SUM) or the larger, NaN winning (MAX)."""
    if op == SUM:
        return acc + x
    return x if (x > acc or x != x) else acc
