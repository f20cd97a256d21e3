"""minikernel's changes to numba's CUDA simulator (``minikernel.simulator``): a launch
switches Python threads every 0.1 ms, then puts Python's interval back, on both launch
paths (an exercise's ``Kernel.launch``, the naive matmul's ``naive.launch``); and the
threads of a block asking for a shared array at once all get the same one."""
from __future__ import annotations

import sys
import threading
import time
import types

import numpy as np
import pytest

from minikernel import device as dev, simulator
from minikernel.kernels import jit, naive
from minikernel.numba_setup import cuda

from numba.cuda.simulator.kernelapi import FakeCUDAShared  # isort: skip - numba after minikernel's choice

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
    assert intervals == [simulator.SIMULATOR_SWITCH_INTERVAL_S, before]
    assert sys.getswitchinterval() == before


def test_a_kernel_that_raises_still_restores_the_interval(intervals):
    before = sys.getswitchinterval()
    out = cuda.to_device(np.zeros(4, dtype=np.float32))
    with pytest.raises(ZeroDivisionError, match="inside the kernel"):
        _kernel(fails).launch(1, 4, out, out)
    assert intervals == [simulator.SIMULATOR_SWITCH_INTERVAL_S, before]
    assert sys.getswitchinterval() == before


def test_the_naive_matmul_launch_runs_at_the_short_interval(intervals):
    before = sys.getswitchinterval()
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(12, dtype=np.float32).reshape(3, 4)
    out = cuda.to_device(np.zeros((2, 4), dtype=np.float32).ravel())
    naive.launch((1, 1), (4, 2), out, np.array([4, 1]), cuda.to_device(a.ravel()), np.array([3, 1]),
                 cuda.to_device(b.ravel()), np.array([4, 1]), 2, 4, 3)
    np.testing.assert_array_equal(out.copy_to_host().reshape(2, 4), a @ b)
    assert intervals == [simulator.SIMULATOR_SWITCH_INTERVAL_S, before]


def test_threads_asking_for_a_shared_array_at_once_get_the_same_one(monkeypatch):
    """numba's simulator looked the array up, then made it, without a lock: threads that
    all looked before one had stored it got an array each (a slow ``np.empty`` here makes
    every thread look first; 2.8's tree reduction once read NaN from such an array)."""
    shared, real_empty = FakeCUDAShared(0), np.empty

    def slow_empty(*args, **kwargs):
        time.sleep(0.002)  # lets the other threads run between the look-up and the store
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(np, "empty", slow_empty)
    start, got = threading.Barrier(8), []

    def block_thread():
        start.wait()
        got.append(shared.array((4,), np.float32))

    threads = [threading.Thread(target=block_thread) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len({id(a) for a in got}) == 1, f"{len({id(a) for a in got})} arrays for one line"


def test_shared_arrays_of_two_lines_are_two_arrays():
    shared = FakeCUDAShared(0)
    a = shared.array((2, 2), np.float32)
    b = shared.array((2, 2), np.float64)
    assert a is not b and a.shape == (2, 2) and a.dtype == np.float32 and b.dtype == np.float64
    assert shared.array(0, np.dtype(np.float32)) is not a  # size 0: the dynamic shared memory, as numba gives it


def test_this_numba_has_its_shared_arrays_mended():
    """A numba whose simulator is laid out otherwise keeps its own method and Python's
    switch interval: slower, and its race stays. Noticed here, not in a learner's kernel."""
    assert simulator.SHARED_ARRAYS_MENDED, "minikernel.simulator does not know this numba's FakeCUDAShared"
    assert FakeCUDAShared.array is simulator.shared_array
