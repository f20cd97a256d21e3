"""Exercises 5.6 and 5.7: LayerNorm forward and backward on the GPU (``numba.cuda.jit``).

Same arrays as the CPU kernels in ``cpu.py`` — ``x`` is ``(rows, n)``, C-contiguous,
already on the device — but the work is split the CUDA way:

=================================  ===========================================
kernel                             launch (done by ``norm/native.py``)
=================================  ===========================================
``layer_norm_forward_gpu`` (5.6)   ``rows`` blocks x ``NORM_THREADS``: one block per row
``layer_norm_backward_gpu`` (5.7)  ``rows`` blocks x ``NORM_THREADS``: one block per row
``layer_norm_param_grads_gpu``     ``ceil(n / NORM_THREADS)`` blocks x ``NORM_THREADS``:
(5.7)                              one thread per column
=================================  ===========================================

Inside a row's block, thread ``t`` handles the columns ``j = t, t + NORM_THREADS,
...``: consecutive threads read consecutive addresses (coalesced). A row's sum
needs every thread's partial sum: ``block_sum(partial, value)`` below adds one
value per thread through a shared-memory tree (exercise 2.8's reduction) and
returns the total *to every thread*. Every thread of the block must call it
(it synchronizes), so never call it inside an ``if`` that only some threads take.

Without a GPU these kernels run on numba's CUDA simulator (``NORM_THREADS`` is 8
there); on a GPU they compile to native code.
"""
from __future__ import annotations

import math  # noqa: F401 - math.sqrt, for your kernels

import numpy as np
from numba import cuda

from ..course.exercise import exercise
from .cpu import Array
from .sizes import NORM_THREADS

__all__ = ["layer_norm_forward_gpu", "layer_norm_backward_gpu", "layer_norm_param_grads_gpu", "block_sum",
           "cuda", "math", "np"]


@cuda.jit(device=True)
def block_sum(partial, value):
    """Sum ``value`` over the threads of the block; every thread gets the total.

    ``partial`` is a ``cuda.shared.array(NORM_THREADS, np.float64)`` the kernel
    allocates once and may pass to every call. Thread ``t`` stores its value in
    ``partial[t]``; the block halves the array step by step (``partial[t] +=
    partial[t + s]``), synchronizing after each step; everyone reads ``partial[0]``
    and synchronizes once more, so the next call can overwrite ``partial``.
    """
    t = cuda.threadIdx.x
    partial[t] = value
    cuda.syncthreads()
    s = NORM_THREADS // 2
    while s > 0:
        if t < s:
            partial[t] += partial[t + s]
        cuda.syncthreads()
        s //= 2
    total = partial[0]
    cuda.syncthreads()  # all threads have read the total before anyone writes partial again
    return total


@exercise("5.6")
def layer_norm_forward_gpu(x: Array, weight: Array, bias: Array, eps: float,
                           out: Array, mean: Array, rstd: Array) -> None:
    """One block per row: block ``r = cuda.blockIdx.x`` normalizes row ``r`` of ``x``.

    Exercise 5.4's three passes, each split over the block's threads: thread ``t``
    sums ``x[r, j]`` for ``j`` in ``range(t, n, NORM_THREADS)``, ``block_sum`` turns
    the partial sums into the row's sum (so every thread knows the mean); the same
    for the squared deviations (biased variance, ``rstd = 1 / math.sqrt(var + eps)``);
    then each thread writes its columns of ``out``. Thread 0 writes ``mean[r]`` and
    ``rstd[r]``. Allocate ``partial = cuda.shared.array(NORM_THREADS, np.float64)``
    once, at the top; accumulate in float64 (start at ``0.0``).

    Work budget, measured on the simulator: no thread reads more than
    ``3 * ceil(n / NORM_THREADS)`` elements of ``x`` (its share of three passes), and
    every thread of a block calls ``cuda.syncthreads()`` (through ``block_sum``)
    equally often.

    Matches: ``torch.native_layer_norm(x, (n,), weight, bias, eps)`` on a ``"cuda"`` tensor.
    """
    # TODO(5.6): ≈16 lines
    raise NotImplementedError("exercise 5.6 (layer_norm_forward_gpu) is not implemented yet")


@exercise("5.7")
def layer_norm_backward_gpu(dy: Array, x: Array, mean: Array, rstd: Array, weight: Array, dx: Array) -> None:
    """``dx`` of one row per block: ``dx[r, j] = rstd/n · (n·g - Σg - x̂·Σ(g·x̂))``, ``g = dy·weight``.

    Exercise 5.5's ``dx`` part, split like 5.6: each thread accumulates ``g`` and
    ``g · x̂`` over its columns, two ``block_sum`` calls give the row's ``Σg`` and
    ``Σ(g·x̂)`` to every thread, and each thread writes its columns of ``dx``.
    Work budget, measured on the simulator: no thread reads more than
    ``2 * ceil(n / NORM_THREADS)`` elements of ``dy``, and every thread of a block
    calls ``cuda.syncthreads()`` equally often.

    Matches: the first output of ``torch.ops.aten.native_layer_norm_backward`` on ``"cuda"`` tensors.
    """
    # TODO(5.7): ≈16 lines
    raise NotImplementedError("exercise 5.7 (layer_norm_backward_gpu) is not implemented yet")


@exercise("5.7")
def layer_norm_param_grads_gpu(dy: Array, x: Array, mean: Array, rstd: Array, dw: Array, db: Array) -> None:
    """``dw[j] = Σ_r dy[r, j] · x̂[r, j]`` and ``db[j] = Σ_r dy[r, j]``: one thread per column.

    Thread ``j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x`` (if ``j < n``)
    walks down column ``j``, recomputing ``x̂[r, j] = (x[r, j] - mean[r]) · rstd[r]``.
    Each thread owns its output, so no two threads add into the same memory, and the
    32 threads of a warp read 32 neighbouring columns of a row at once (coalesced).

    Matches: the second and third outputs of ``torch.ops.aten.native_layer_norm_backward``.
    """
    # TODO(5.7): ≈10 lines
    raise NotImplementedError("exercise 5.7 (layer_norm_param_grads_gpu) is not implemented yet")
