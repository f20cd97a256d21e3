"""What minikernel changes in numba's CUDA simulator, when GPU kernels run there.

The simulator runs each CUDA thread of a block as a Python thread. Two of its ways
differ from a GPU's, and this module mends both (on a real GPU it does nothing):

* **Thread switching** (``kernel_launch``). The simulator watches its threads from a
  loop that never sleeps; at Python's default switch interval of 5 ms that loop keeps
  the interpreter up to 5 ms each time a CUDA thread is ready to go on (after
  ``syncthreads``, at its start). Launches wrapped in ``kernel_launch`` switch every
  ``SIMULATOR_SWITCH_INTERVAL_S``.
* **Shared arrays made twice** (``shared_array``). ``cuda.shared.array`` looks up the
  block's array for the calling line and makes it when there is none, without a lock:
  two threads that both look before either has stored it get an array each, and what
  one writes the other never reads (a tree reduction then reads an element of
  ``np.empty``: any value, NaN included). The more often threads switch, the more often
  that happens, so the simulator's method is replaced, when this module is imported,
  by one that looks up and makes the array under a lock.
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Iterator

import numpy as np

from .device import SIMULATOR
from .numba_setup import numba  # noqa: F401 - numba imported after device.py's choice

#: Python's thread switch interval while a kernel runs on the simulator, in seconds. A
#: 3 x 66 LayerNorm forward (3 blocks of 8 threads) took 0.375 s at Python's default of
#: 5 ms, 0.119 s at 1 ms, 0.033 s at 0.1 ms (0.039 s at 0.05 ms, 0.042 s at 0.02 ms).
SIMULATOR_SWITCH_INTERVAL_S = 1e-4


@contextlib.contextmanager
def kernel_launch() -> Iterator[None]:
    """Wrap a GPU kernel launch: on the simulator, switch Python threads every
    ``SIMULATOR_SWITCH_INTERVAL_S`` while it runs (then restore the interval); on a GPU,
    nothing. The simulator's threads compute the same values either way: only the time
    spent waiting for a turn changes. (Not on a numba whose shared arrays this module
    could not mend: switching often would make them go wrong more often.)"""
    if not SHARED_ARRAYS_MENDED:
        yield
        return
    before = sys.getswitchinterval()
    sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL_S)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


_SHARED_LOCK = threading.Lock()


def shared_array(self, shape, dtype, alignment=None):
    """``cuda.shared.array`` on the simulator (``FakeCUDAShared.array``), made under a lock.

    As numba's: the array of a block is named by the file and line that asks for it,
    and a size of 0 asks for the dynamic shared memory. Unlike numba's, two threads of a
    block asking at once get the same array."""
    if shape == 0 or alignment is not None:  # the dynamic shared memory, or numba's own error
        return _numba_shared_array(self, shape, dtype, alignment)
    if isinstance(dtype, _kernelapi.types.Type):
        dtype = _kernelapi.numpy_support.as_dtype(dtype)
    frame = sys._getframe(1)
    caller = (frame.f_code.co_filename, frame.f_lineno)
    with _SHARED_LOCK:
        array = self._allocations.get(caller)
        if array is None:
            array = self._allocations[caller] = np.empty(shape, dtype)
    return array


def _knows(kernelapi) -> bool:
    """Whether ``kernelapi`` (numba's simulator) is laid out as ``shared_array`` expects;
    another numba keeps its own method."""
    shared = getattr(kernelapi, "FakeCUDAShared", None)
    return (shared is not None and hasattr(kernelapi, "types") and hasattr(kernelapi, "numpy_support")
            and "_allocations" in shared.__init__.__code__.co_names)


#: True when GPU kernels run on the simulator and its ``cuda.shared.array`` is ``shared_array``.
SHARED_ARRAYS_MENDED = False
if SIMULATOR:
    from numba.cuda.simulator import kernelapi as _kernelapi

    if _knows(_kernelapi):
        _numba_shared_array = _kernelapi.FakeCUDAShared.array
        _kernelapi.FakeCUDAShared.array = shared_array
        SHARED_ARRAYS_MENDED = True
