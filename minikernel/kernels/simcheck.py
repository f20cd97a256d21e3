"""What a GPU launch did on numba's CUDA simulator: memory traffic and barriers.

A GPU kernel's lesson is often a technique, not only a value: the tiled matmul (2.9)
reads each global element ``TILE`` times less often than a naive one; the tree
reduction (2.8) splits a row over the block's threads and halves in shared memory;
every ``cuda.syncthreads()`` must be reached by every thread of the block. The
simulator runs each CUDA thread as a Python thread, so all of this can be counted:

* :class:`CountingArray` wraps a kernel argument and counts each thread's element
  reads and writes (pass it to the launch in place of the numpy array);
* :func:`recording` also counts, per thread, the reads and writes of
  ``cuda.shared.array`` memory and the ``cuda.syncthreads()`` calls, and afterwards
  :meth:`Record.check_barriers` raises when the threads of one block made different
  numbers of calls — which on a real GPU hangs or races, while the simulator lets it
  through (it waits only for the threads still running).

Only the simulator can do this (on a real GPU the kernel is native code).
"""
from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from numba import types
from numba.cuda.simulator import kernel, kernelapi
from numba.np import numpy_support

from .. import device as dev

Dim = tuple[int, int, int]
Who = tuple[Dim, Dim]  #: (blockIdx, threadIdx)


def _who() -> Who | None:
    """(blockIdx, threadIdx) of the calling simulated CUDA thread; None on the host."""
    me = threading.current_thread()
    if not hasattr(me, "blockIdx"):
        return None
    return (me.blockIdx.x, me.blockIdx.y, me.blockIdx.z), (me.threadIdx.x, me.threadIdx.y, me.threadIdx.z)


@dataclass
class Record:
    """Counts per simulated thread, for one or more launches."""

    reads: Counter = field(default_factory=Counter)    #: {(space, array, who): element reads}
    writes: Counter = field(default_factory=Counter)   #: {(space, array, who): element writes}
    syncs: Counter = field(default_factory=Counter)    #: {who: cuda.syncthreads() calls}
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, kind: str, space: str, array: str) -> None:
        who = _who()
        if who is not None:  # the host filling or reading an array is not traffic
            with self._lock:
                (self.reads if kind == "read" else self.writes)[space, array, who] += 1

    def total(self, kind: str, space: str, array: str | None = None) -> int:
        """All element reads (``kind="read"``) or writes of ``space`` ("global"/"shared")."""
        counts = self.reads if kind == "read" else self.writes
        return sum(n for (s, a, _), n in counts.items() if s == space and array in (None, a))

    def per_thread(self, kind: str, space: str, array: str | None = None) -> Counter:
        """{who: accesses} of ``space`` (and ``array``, when given)."""
        counts = self.reads if kind == "read" else self.writes
        out: Counter = Counter()
        for (s, a, who), n in counts.items():
            if s == space and array in (None, a):
                out[who] += n
        return out

    def check_barriers(self, grid: Dim, block: Dim) -> None:
        """Raise RuntimeError unless every thread of each block called ``cuda.syncthreads()``
        equally often (a barrier some threads skip hangs or races on a real GPU)."""
        for b in np.ndindex(*grid):
            calls = {t: self.syncs[(tuple(b), tuple(t))] for t in np.ndindex(*block)}
            if len(set(calls.values())) > 1:
                fewest = min(calls, key=calls.get)
                most = max(calls, key=calls.get)
                raise RuntimeError(
                    f"cuda.syncthreads() is not reached by every thread of block {tuple(b)}: thread "
                    f"{tuple(most)} called it {calls[most]} times, thread {tuple(fewest)} {calls[fewest]} "
                    "times. Every thread of a block must reach every syncthreads(): keep it out of "
                    "branches that only some threads take, and out of loops whose trip count differs "
                    "between threads.")


class CountingArray:
    """A 1-D kernel argument that counts element reads and writes per simulated thread."""

    def __init__(self, data: np.ndarray, name: str, record: Record, space: str = "global"):
        self.data, self.name, self.record, self.space = data, name, record, space

    def __getitem__(self, index):
        self.record.count("read", self.space, self.name)
        return self.data[index]

    def __setitem__(self, index, value):
        self.record.count("write", self.space, self.name)
        self.data[index] = value

    def __len__(self) -> int:
        return len(self.data)

    shape = property(lambda self: self.data.shape)
    size = property(lambda self: self.data.size)
    ndim = property(lambda self: self.data.ndim)
    dtype = property(lambda self: self.data.dtype)
    itemsize = property(lambda self: self.data.itemsize)


@contextmanager
def recording() -> Iterator[Record]:
    """Count shared-memory traffic and ``cuda.syncthreads()`` calls of the launches inside.

    Global traffic is counted by the :class:`CountingArray` arguments given to a launch
    (pass them the record yielded here). Raises RuntimeError off the simulator.
    """
    if not dev.SIMULATOR:
        raise RuntimeError("counting memory traffic needs numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)")
    record = Record()
    shared_array, syncthreads = kernelapi.FakeCUDAShared.array, kernel.BlockThread.syncthreads
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        # One array per launch and call site, as the simulator itself keeps them.
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        store = self.__dict__.setdefault("_mk_counted", {})
        with lock:
            if key not in store:
                store[key] = _CountingShared(np.empty(shape, dtype), f"shared@{key[1]}", record)
            return store[key]

    def counted_syncthreads(self):
        with lock:
            record.syncs[(self.blockIdx.x, self.blockIdx.y, self.blockIdx.z),
                         (self.threadIdx.x, self.threadIdx.y, self.threadIdx.z)] += 1
        return syncthreads(self)

    kernelapi.FakeCUDAShared.array = array
    kernel.BlockThread.syncthreads = counted_syncthreads
    try:
        yield record
    finally:
        kernelapi.FakeCUDAShared.array = shared_array
        kernel.BlockThread.syncthreads = syncthreads


class _CountingShared(CountingArray):
    """A shared array (any number of dimensions) that counts per simulated thread."""

    def __init__(self, data: np.ndarray, name: str, record: Record):
        super().__init__(data, name, record, space="shared")
