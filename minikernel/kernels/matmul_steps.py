"""The CPU matmul, step by step: reference points for chapter 02's measurement, not exercises.

Each step computes ``out[i, j] = sum_k a[i, k] * b[k, j]`` for 2-D C-contiguous numpy
arrays, compiled with the flags of every CPU kernel (``jit.CPU_KERNEL_OPTIONS``), and
changes one thing from the step before:

1. ``ijk`` — the textbook loop: a dot product per output. The inner loop walks a
   column of ``b``, one element every ``m``: a new cache line for each multiply-add.
2. ``ikj`` — the same sums in another loop order: for each ``a[i, k]``, add
   ``a[i, k] * b[k, :]`` to the row ``out[i, :]``. Both inner streams are contiguous,
   so the compiler vectorizes the loop; ``out[i, :]`` is read and written ``k`` times.

The last step is your ``cpu_matmul`` (exercise 2.5), called through ``minikernel/aten/linalg.py``.
The reference goes further: it copies tiles of ``a`` and ``b`` into small contiguous
buffers that stay in cache (each tile of ``b`` serves 256 rows of ``a``) and computes
4 x 4 outputs at a time, so each value loaded is used four times from a register.
"""
from __future__ import annotations

from typing import Callable

import numba
import numpy as np
from numba import prange

from .jit import CPU_KERNEL_OPTIONS


def ijk(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Step 1: one dot product per output, reading ``b`` down a column."""
    n, inner = a.shape
    m = b.shape[1]
    for i in prange(n):
        for j in range(m):
            acc = out.dtype.type(0)
            for k in range(inner):
                acc += a[i, k] * b[k, j]
            out[i, j] = acc


def ikj(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Step 2: for each ``a[i, k]``, ``out[i, :] += a[i, k] * b[k, :]`` (contiguous, vectorized)."""
    n, inner = a.shape
    m = b.shape[1]
    for i in prange(n):
        for j in range(m):
            out[i, j] = 0
        for k in range(inner):
            aik = a[i, k]
            for j in range(m):
                out[i, j] += aik * b[k, j]


STEPS: dict[str, Callable] = {"1. ijk: a dot product per output": ijk,
                              "2. ikj: rows of b, vectorized": ikj}
_compiled: dict[Callable, Callable] = {}


def compiled(step: Callable) -> Callable:
    """``step`` compiled with the CPU kernels' flags (on first use; cached on disk)."""
    if step not in _compiled:
        _compiled[step] = numba.njit(cache=True, **CPU_KERNEL_OPTIONS)(step)
    return _compiled[step]


def run(step: Callable, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` computed by ``step`` (2-D, C-contiguous, same dtype)."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError(f"matmul_steps take two 2-D arrays of one dtype with matching inner sizes, got "
                         f"{a.shape} {a.dtype} and {b.shape} {b.dtype}")
    out = np.empty((a.shape[0], b.shape[1]), a.dtype)
    compiled(step)(out, np.ascontiguousarray(a), np.ascontiguousarray(b))
    return out
