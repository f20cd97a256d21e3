"""A caching allocator for ``"cuda"`` tensors on a real GPU (numba's memory-manager plugin).

A minikernel ``"cuda"`` tensor stores its elements in a numba device array, and numba
asks the CUDA driver for every one (``cuMemAlloc``) and returns it when the array is
garbage-collected. This module keeps the returned blocks in a
:class:`~minikernel.memory_pool.BlockPool` and hands them out again, as PyTorch's CUDA
caching allocator does, so a kernel launched on a fresh output does not wait for the
driver first.

numba loads a replacement memory manager from the module named by the environment
variable ``NUMBA_CUDA_MEMORY_MANAGER`` (attribute ``_numba_memory_manager``), read
when numba is imported; :mod:`minikernel.device` sets it to this module when it finds
a GPU, unless it is already set. The simulator has no driver and does not use it, and
numba's own imports here would fail there: import this module only on a GPU.

Reuse is safe because minikernel launches every kernel on the default stream, in
order: a block freed while a kernel still reads it is handed to a later kernel, which
starts after the earlier one ends. Numba itself may still allocate through the
driver for things it manages apart (host memory, mapped arrays).

Example (on a GPU)::

    >>> from numba import cuda
    >>> first = cuda.device_array(1 << 26, "float32")  # 256 MiB from the driver
    >>> address = first.device_ctypes_pointer.value
    >>> del first                                      # its block goes to the pool
    >>> cuda.device_array(1 << 26, "float32").device_ctypes_pointer.value == address
    True
    >>> cuda.current_context().memory_manager.empty_cache()  # cached blocks back to the driver
"""
from __future__ import annotations

import functools
import weakref

from numba.cuda.cudadrv.driver import AutoFreePointer, CudaAPIError, NumbaCUDAMemoryManager, binding, driver

from .memory_pool import BlockPool

_OUT_OF_MEMORY = binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY


class CachingMemoryManager(NumbaCUDAMemoryManager):
    """numba's memory manager with a pool of freed blocks in front of ``cuMemAlloc``.

    Attributes:
        pool (BlockPool): the blocks and byte counts (``pool.allocated``, ``pool.reserved``).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pool = BlockPool()

    def memalloc(self, size):
        block_size, block = self.pool.take(size)
        if block is None:
            try:
                block = self._from_driver(block_size)
            except BaseException:
                self.pool.forget(block_size)
                raise
        # numba's pointer objects are reference-counted: the manager holds each one in
        # ``allocations`` until the last array using it is gone; then the finalizer runs,
        # and here the block goes back to the pool instead of to the driver.
        key = int(block)
        finalizer = functools.partial(self._give_back, block_size, block, key)
        memory = AutoFreePointer(weakref.proxy(self.context), block, size, finalizer=finalizer)
        self.allocations[key] = memory
        return memory.own()

    def _give_back(self, block_size, block, key):
        self.allocations.pop(key, None)
        self.pool.give(block_size, block)

    def _from_driver(self, block_size):
        try:
            return driver.cuMemAlloc(block_size)
        except CudaAPIError as err:
            if err.code != _OUT_OF_MEMORY:
                raise
        # Out of memory: give the cached blocks back and try once more (numba's own retry
        # first flushes the frees it has deferred).
        self.empty_cache()
        return self._attempt_allocation(lambda: driver.cuMemAlloc(block_size))

    def empty_cache(self) -> None:
        """Give every cached block back to the driver (``torch.cuda.empty_cache()``)."""
        for block in self.pool.drain():
            driver.cuMemFree(block)

    def reset(self):
        self.empty_cache()
        super().reset()


_numba_memory_manager = CachingMemoryManager
