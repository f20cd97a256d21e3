"""Exercises 5.4 and 5.5: LayerNorm forward and backward on the CPU (``numba.njit(parallel=True)``).

The host (``norm/native.py``) has already reduced every LayerNorm to two
dimensions: ``x`` is a C-contiguous ``(rows, n)`` array, one row per normalized
group (``rows`` = product of the leading dimensions, ``n`` = product of
``normalized_shape``), ``weight`` and ``bias`` are ``(n,)`` arrays (ones and zeros
when the layer has none), and the outputs are allocated. Row ``r``::

    mean[r] = Σ_j x[r, j] / n
    rstd[r] = 1 / sqrt(Σ_j (x[r, j] - mean[r])² / n + eps)     (biased variance)
    x̂[r, j] = (x[r, j] - mean[r]) · rstd[r]
    out[r, j] = x̂[r, j] · weight[j] + bias[j]

Rows are independent: ``for r in prange(rows)`` spreads them over the cores, and a
row of 1024 float32 values (4 KiB) stays in the L1 cache between passes, so two
passes over it cost little more than one. minikernel compiles the active function
with ``numba.njit(parallel=True, error_model="numpy", fastmath={"reassoc", "contract"})``
(``reassoc`` lets numba vectorize the sums).

``x[r]`` is row ``r`` as a 1-D view (no copy); indexing a view in the inner loop
is the fast way.
"""
from __future__ import annotations

import numpy as np
from numba import prange  # noqa: F401 - for your kernels

from ..course.exercise import exercise
from .sizes import CPU_ROWS_PER_TASK  # noqa: F401 - for your kernels

Array = np.ndarray  #: a C-contiguous numpy array: (rows, n), (rows,) or (n,)

__all__ = ["layer_norm_forward_cpu", "layer_norm_backward_cpu", "np", "prange"]


@exercise("5.4")
def layer_norm_forward_cpu(x: Array, weight: Array, bias: Array, eps: float,
                           out: Array, mean: Array, rstd: Array) -> None:
    """LayerNorm of each row of ``x`` (rows, n): write ``out`` (rows, n), ``mean`` and ``rstd`` (rows,).

    For each row, in parallel (``prange``): pass 1 sums the row for its mean; pass 2
    sums squared deviations from that mean for the *biased* variance (divide by
    ``n``, not ``n - 1``); ``rstd = 1 / np.sqrt(var + eps)``; pass 3 writes
    ``out[r, j] = (x[r, j] - mean) * rstd * weight[j] + bias[j]``.

    Accumulate in float64 (start the sums at ``0.0``): values are converted as they
    are added, for free here. ``n >= 1`` (the host handles empty rows).

    Matches: ``torch.native_layer_norm(x, (n,), weight, bias, eps)``, which returns
    ``(out, mean, rstd)`` — ``F.layer_norm`` is its first output.
    """
    # TODO(5.4): ≈16 lines
    raise NotImplementedError("exercise 5.4 (layer_norm_forward_cpu) is not implemented yet")


@exercise("5.5")
def layer_norm_backward_cpu(dy: Array, x: Array, mean: Array, rstd: Array, weight: Array,
                            dx: Array, dw: Array, db: Array) -> None:
    """Gradients of LayerNorm from the upstream gradient ``dy`` (rows, n): write ``dx``, ``dw``, ``db``.

    With ``x̂ = (x - mean[r]) · rstd[r]`` and ``g = dy · weight`` (the gradient
    reaching ``x̂``), for each row::

        dx[r, j] = rstd[r] / n · (n · g[r, j] - Σ_k g[r, k] - x̂[r, j] · Σ_k g[r, k] · x̂[r, k])

    and over all rows::

        dw[j] = Σ_r dy[r, j] · x̂[r, j]        db[j] = Σ_r dy[r, j]

    ``dx`` is per row, like the forward. ``dw`` and ``db`` sum *across* rows, so
    rows running in parallel must not add into the same ``dw[j]`` (a data race:
    updates get lost). Give each task its own partial sums instead: split the rows
    into tasks of ``CPU_ROWS_PER_TASK``, allocate ``partial = np.zeros((tasks, 2, n),
    dx.dtype)`` *before* the ``prange`` loop, let task ``t`` accumulate its rows into
    ``partial[t]`` while it computes their ``dx`` (one read of ``dy`` and ``x`` serves
    both), and after the loop add the partials up per column (another ``prange``,
    over ``j``). That is PyTorch's CPU scheme too.

    Matches: ``torch.ops.aten.native_layer_norm_backward(dy, x, (n,), mean, rstd,
    weight, bias, [True, True, True])`` (what autograd calls for ``F.layer_norm``).
    """
    # TODO(5.5): ≈30 lines
    raise NotImplementedError("exercise 5.5 (layer_norm_backward_cpu) is not implemented yet")
