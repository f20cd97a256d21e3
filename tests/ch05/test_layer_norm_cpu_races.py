"""Exercises 5.4 and 5.5: no two iterations of a ``prange`` loop write the same element.

A shared accumulator (every task adding into one ``dw`` row) gives the right sums
whenever the threads happen not to collide, which on two busy cores is most of the
time: the value tests pass. ``tests/prange_writes.py`` runs the kernel as Python and
records which loop iteration wrote which element, so a race shows on every run.
The values of that run are compared with torch too (it is the same code).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from minikernel.norm import native
from minikernel.norm.sizes import CPU_ROWS_PER_TASK
from tests.ch05.strategies import randn
from tests.prange_writes import conflicts

ROWS, N = 2 * CPU_ROWS_PER_TASK + 5, 6  # three tasks, the last one short


def _race_message(found) -> str:
    loop, iterations = found[0]
    return (f"{len(found)} elements were each written by more than one iteration of prange loop {loop} "
            f"(e.g. iterations {iterations[:4]}): iterations run on different threads at the same time, so "
            "their read-add-writes overwrite each other (lost updates). Give each iteration memory of its own "
            "(a partial row per task, summed after the loop)")


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy().copy()


@pytest.mark.exercise("5.5")
def test_backward_tasks_write_disjoint_memory():
    native.KERNELS["cpu"]["backward"].check_implemented()
    x, dy = randn((ROWS, N), torch.float64, 31), randn((ROWS, N), torch.float64, 32)
    w, b = randn((N,), torch.float64, 33), randn((N,), torch.float64, 34)
    out, mean, rstd = torch.ops.aten.native_layer_norm(x, (N,), w, b, 1e-5)
    dx, dw, db = (np.full(shape, np.nan) for shape in ((ROWS, N), (N,), (N,)))
    fn = native.KERNELS["cpu"]["backward"].function
    found = conflicts(fn, _numpy(dy), _numpy(x), _numpy(mean).reshape(ROWS), _numpy(rstd).reshape(ROWS),
                      _numpy(w), dx, dw, db)
    assert not found, _race_message(found)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, (N,), mean, rstd, w, b, [True, True, True])
    for got, theirs in zip((dx, dw, db), expected):
        torch.testing.assert_close(torch.from_numpy(got), theirs, rtol=1e-9, atol=1e-9)


@pytest.mark.exercise("5.4")
def test_forward_rows_write_disjoint_memory():
    native.KERNELS["cpu"]["forward"].check_implemented()
    x = randn((ROWS, N), torch.float64, 35)
    w, b = randn((N,), torch.float64, 36), randn((N,), torch.float64, 37)
    out, mean, rstd = np.full((ROWS, N), np.nan), np.full(ROWS, np.nan), np.full(ROWS, np.nan)
    fn = native.KERNELS["cpu"]["forward"].function
    found = conflicts(fn, _numpy(x), _numpy(w), _numpy(b), 1e-5, out, mean, rstd)
    assert not found, _race_message(found)
    expected = torch.ops.aten.native_layer_norm(x, (N,), w, b, 1e-5)
    for got, theirs in zip((out, mean, rstd), expected):
        torch.testing.assert_close(torch.from_numpy(got), theirs.reshape(got.shape), rtol=1e-9, atol=1e-9)
