"""Chapter 05 edge cases: the GPU LayerNorm kernels split each row over the block.

On numba's CUDA simulator the launches are recorded (``minikernel.kernels.simcheck``):
the point of 5.6 and 5.7 is one block per row with the columns shared among its
threads, so a kernel where one thread walks the whole row fails here even when its
values are right; and every thread must reach every ``cuda.syncthreads()``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from minikernel import device as dev
from minikernel.kernels import simcheck
from minikernel.norm.native import KERNELS
from minikernel.norm.sizes import NORM_THREADS
from tests.ch05.strategies import randn

pytestmark = pytest.mark.skipif(not dev.SIMULATOR, reason="counting memory traffic needs the CUDA simulator")
ROWS, N = 3, 2 * NORM_THREADS + 5  # rows longer than a block, not a multiple of it


def _inputs():
    x = randn((ROWS, N), torch.float64, 40, shift=10.0)
    w, b = randn((N,), torch.float64, 41), randn((N,), torch.float64, 42)
    return x, w, b


@pytest.mark.exercise("5.6")
def test_forward_shares_each_row_among_the_threads():
    x, w, b = _inputs()
    out, mean, rstd = np.zeros((ROWS, N)), np.zeros(ROWS), np.zeros(ROWS)
    with simcheck.recording() as record:
        KERNELS["cuda"]["forward"].launch(ROWS, NORM_THREADS, simcheck.CountingArray(x.numpy(), "x", record),
                                          w.numpy(), b.numpy(), 1e-5, out, mean, rstd)
    expected = torch.native_layer_norm(x, (N,), w, b, 1e-5)
    torch.testing.assert_close(torch.from_numpy(out), expected[0], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(torch.from_numpy(rstd), expected[2].reshape(-1), rtol=1e-10, atol=1e-10)
    record.check_barriers((ROWS, 1, 1), (NORM_THREADS, 1, 1))
    most, budget = max(record.per_thread("read", "global", "x").values()), 3 * math.ceil(N / NORM_THREADS)
    assert most <= budget, (f"one thread read {most} elements of x; budget {budget} = 3 passes x ceil(n {N} / "
                            f"NORM_THREADS {NORM_THREADS}): thread t takes columns t, t + NORM_THREADS, ...")


@pytest.mark.exercise("5.7")
def test_backward_shares_each_row_among_the_threads():
    x, w, _ = _inputs()
    dy = randn((ROWS, N), torch.float64, 43)
    _, mean, rstd = torch.native_layer_norm(x, (N,), w, None, 1e-5)
    m, r = mean.reshape(-1).numpy(), rstd.reshape(-1).numpy()
    dx, dw, db = np.zeros((ROWS, N)), np.zeros(N), np.zeros(N)
    with simcheck.recording() as record:
        KERNELS["cuda"]["backward"].launch(ROWS, NORM_THREADS, simcheck.CountingArray(dy.numpy(), "dy", record),
                                           x.numpy(), m, r, w.numpy(), dx)
    blocks = math.ceil(N / NORM_THREADS)
    with simcheck.recording() as columns:
        KERNELS["cuda"]["param_grads"].launch(blocks, NORM_THREADS, simcheck.CountingArray(dy.numpy(), "dy", columns),
                                              x.numpy(), m, r, dw, db)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, (N,), mean, rstd, w, torch.zeros(N, dtype=x.dtype),
                                                         [True, True, True])
    for got, theirs in zip((dx, dw, db), expected):
        torch.testing.assert_close(torch.from_numpy(got), theirs, rtol=1e-10, atol=1e-10)
    record.check_barriers((ROWS, 1, 1), (NORM_THREADS, 1, 1))
    most, budget = max(record.per_thread("read", "global", "dy").values()), 2 * math.ceil(N / NORM_THREADS)
    assert most <= budget, (f"one thread of the dx kernel read {most} elements of dy; budget {budget} = 2 passes "
                            f"x ceil(n {N} / NORM_THREADS {NORM_THREADS})")
    most = max(columns.per_thread("read", "global", "dy").values())
    assert most <= 2 * ROWS, (f"one thread of the dw/db kernel read {most} elements of dy; budget {2 * ROWS}: "
                              "its own column, once for dw and once for db")
