"""Chapter 05 edge cases: the GPU kernels' read budget at row lengths that are whole multiples of the block, and longer rows.

test_edges_norm_gpu.py counts the reads for one row length, ``2 * NORM_THREADS + 5``;
there a thread that starts one column early (at ``t - 1``), or strides by one column
too few, still reads no more than its share. At a multiple of the block, or over longer
rows, the extra reads show: thread ``t`` takes columns ``t, t + NORM_THREADS, ...``
in every pass, ``ceil(n / NORM_THREADS)`` of them.
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

pytestmark = [pytest.mark.skipif(not dev.SIMULATOR, reason="counting memory traffic needs the CUDA simulator"),
              pytest.mark.xdist_group("ch05-gpu")]
ROWS = 2
LENGTHS = [NORM_THREADS, 4 * NORM_THREADS, 5 * NORM_THREADS - 1, 3]
# the forward at odd lengths only: at even ones a kernel may read 16 bytes at once (two float64
# columns, through a view of the row), which the counting array cannot follow
ODD_LENGTHS = [4 * NORM_THREADS + 1, 5 * NORM_THREADS - 1, 3]


@pytest.mark.exercise("5.7")
@pytest.mark.parametrize("n", LENGTHS)
def test_backward_reads_its_share_of_dy_at_any_length(n):
    x, dy = randn((ROWS, n), torch.float64, 50, shift=2.0), randn((ROWS, n), torch.float64, 51)
    w = randn((n,), torch.float64, 52)
    _, mean, rstd = torch.native_layer_norm(x, (n,), w, None, 1e-5)
    dx = np.zeros((ROWS, n))
    with simcheck.recording() as record:
        KERNELS["cuda"]["backward"].launch(ROWS, NORM_THREADS, simcheck.CountingArray(dy.numpy(), "dy", record),
                                           x.numpy(), mean.reshape(-1).numpy(), rstd.reshape(-1).numpy(),
                                           w.numpy(), dx)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, (n,), mean, rstd, w, None, [True, False, False])[0]
    torch.testing.assert_close(torch.from_numpy(dx), expected, rtol=1e-10, atol=1e-10)
    record.check_barriers((ROWS, 1, 1), (NORM_THREADS, 1, 1))
    most, budget = max(record.per_thread("read", "global", "dy").values()), 2 * math.ceil(n / NORM_THREADS)
    assert most <= budget, (f"n = {n}: one thread of the dx kernel read {most} elements of dy; budget {budget} = "
                            f"2 passes x ceil(n / NORM_THREADS {NORM_THREADS}): thread t takes columns t, "
                            "t + NORM_THREADS, ... in each pass")


@pytest.mark.exercise("5.6")
@pytest.mark.parametrize("n", ODD_LENGTHS)
def test_forward_reads_its_share_of_x_at_any_length(n):
    x = randn((ROWS, n), torch.float64, 53, shift=2.0)
    w, b = randn((n,), torch.float64, 54), randn((n,), torch.float64, 55)
    out, mean, rstd = np.zeros((ROWS, n)), np.zeros(ROWS), np.zeros(ROWS)
    with simcheck.recording() as record:
        KERNELS["cuda"]["forward"].launch(ROWS, NORM_THREADS, simcheck.CountingArray(x.numpy(), "x", record),
                                          w.numpy(), b.numpy(), 1e-5, out, mean, rstd)
    expected = torch.native_layer_norm(x, (n,), w, b, 1e-5)
    torch.testing.assert_close(torch.from_numpy(out), expected[0], rtol=1e-10, atol=1e-10)
    record.check_barriers((ROWS, 1, 1), (NORM_THREADS, 1, 1))
    most, budget = max(record.per_thread("read", "global", "x").values()), 3 * math.ceil(n / NORM_THREADS)
    assert most <= budget, (f"n = {n}: one thread read {most} elements of x; budget {budget} = 3 passes x "
                            f"ceil(n / NORM_THREADS {NORM_THREADS})")
