"""On numba's CUDA simulator a launch switches Python threads every 0.1 ms, then puts
Python's interval back (``device.kernel_launch``), on both launch paths: an exercise's
``Kernel.launch`` and the naive matmul's ``naive.launch``."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from minikernel import device as dev
from minikernel.kernels import jit, naive
from minikernel.numba_setup import cuda

pytestmark = pytest.mark.skipif(not dev.SIMULATOR, reason="the switch interval is changed on the simulator only")


def double(out, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * a[i]


def fails(out, a):
    raise ZeroDivisionError("inside the kernel")


def _kernel(fn) -> jit.Kernel:
    module = types.ModuleType("probe.gpu")  # a module named *.gpu makes a GPU kernel
    setattr(module, fn.__name__, fn)
    return jit.Kernel("0.0", module, fn.__name__)


@pytest.fixture
def intervals(monkeypatch) -> list[float]:
    """Every interval set while the test runs, in order."""
    seen, real = [], sys.setswitchinterval
    monkeypatch.setattr(sys, "setswitchinterval", lambda s: (seen.append(s), real(s))[1])
    return seen


def test_a_kernel_launch_runs_at_the_short_interval_and_restores_it(intervals):
    before = sys.getswitchinterval()
    a = np.arange(10, dtype=np.float32)
    out = cuda.to_device(np.zeros_like(a))
    _kernel(double).launch(2, 8, out, cuda.to_device(a))
    np.testing.assert_array_equal(out.copy_to_host(), 2 * a)
    assert intervals == [dev.SIMULATOR_SWITCH_INTERVAL_S, before]
    assert sys.getswitchinterval() == before


def test_a_kernel_that_raises_still_restores_the_interval(intervals):
    before = sys.getswitchinterval()
    out = cuda.to_device(np.zeros(4, dtype=np.float32))
    with pytest.raises(ZeroDivisionError, match="inside the kernel"):
        _kernel(fails).launch(1, 4, out, out)
    assert intervals == [dev.SIMULATOR_SWITCH_INTERVAL_S, before]
    assert sys.getswitchinterval() == before


def test_the_naive_matmul_launch_runs_at_the_short_interval(intervals):
    before = sys.getswitchinterval()
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(12, dtype=np.float32).reshape(3, 4)
    out = cuda.to_device(np.zeros((2, 4), dtype=np.float32).ravel())
    naive.launch((1, 1), (4, 2), out, np.array([4, 1]), cuda.to_device(a.ravel()), np.array([3, 1]),
                 cuda.to_device(b.ravel()), np.array([4, 1]), 2, 4, 3)
    np.testing.assert_array_equal(out.copy_to_host().reshape(2, 4), a @ b)
    assert intervals == [dev.SIMULATOR_SWITCH_INTERVAL_S, before]
