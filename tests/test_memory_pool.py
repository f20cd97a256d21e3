"""The caching allocator: the pool's bookkeeping everywhere, numba's plugin on a real GPU."""
from __future__ import annotations

import os

import numpy as np
import pytest

from minikernel import device
from minikernel.memory_pool import LARGE_ROUND, SMALL, SMALL_ROUND, BlockPool, rounded


@pytest.mark.parametrize("size, expected", [(0, SMALL_ROUND), (1, SMALL_ROUND), (SMALL_ROUND, SMALL_ROUND),
                                            (SMALL_ROUND + 1, 2 * SMALL_ROUND), (SMALL - 1, SMALL),
                                            (SMALL, LARGE_ROUND), (LARGE_ROUND + 1, 2 * LARGE_ROUND)])
def test_sizes_round_up_to_their_class(size, expected):
    assert rounded(size) == expected


def test_a_negative_size_is_refused():
    with pytest.raises(ValueError, match="negative"):
        rounded(-1)


def test_a_freed_block_serves_the_next_request_of_its_size_class_only():
    pool = BlockPool()
    assert pool.take(1000) == (1024, None)
    pool.give(1024, "a")
    assert pool.take(5000)[1] is None  # another class: a new block
    assert pool.take(600) == (1024, "a")
    assert pool.take(600)[1] is None  # "a" is handed out again: not twice


def test_allocated_and_reserved_count_bytes_like_torch():
    pool = BlockPool()
    size, _ = pool.take(3 << 20)
    assert (pool.allocated, pool.reserved) == (size, size)
    pool.give(size, "b")
    assert (pool.allocated, pool.reserved) == (0, size)  # cached: still reserved
    pool.take(3 << 20)
    assert (pool.allocated, pool.reserved) == (size, size)
    pool.forget(pool.take(100)[0])  # an allocation that failed counts nothing
    assert (pool.allocated, pool.reserved) == (size, size)


def test_drain_returns_every_cached_block_once():
    pool = BlockPool()
    sizes = [pool.take(n)[0] for n in (10, 10, 4 << 20)]
    for size, block in zip(sizes, "xyz"):
        pool.give(size, block)
    assert sorted(pool.drain()) == ["x", "y", "z"]
    assert pool.drain() == []
    assert (pool.allocated, pool.reserved) == (0, 0)


# ------------------------------------------------------------------ on a GPU
needs_gpu = pytest.mark.skipif(device.CUDA_BACKEND != "gpu", reason="numba's memory manager runs on a real GPU only")


@needs_gpu
def test_cuda_tensors_reuse_freed_blocks():
    from numba import cuda

    from minikernel.cuda_allocator import CachingMemoryManager

    assert os.environ["NUMBA_CUDA_MEMORY_MANAGER"] == "minikernel.cuda_allocator"
    manager = cuda.current_context().memory_manager
    assert isinstance(manager, CachingMemoryManager)
    first = cuda.device_array(1 << 24, np.float32)
    address = first.device_ctypes_pointer.value
    reserved = manager.pool.reserved
    del first
    again = cuda.to_device(np.arange(1 << 24, dtype=np.float32))
    assert again.device_ctypes_pointer.value == address
    assert manager.pool.reserved == reserved
    assert np.array_equal(again.copy_to_host(), np.arange(1 << 24, dtype=np.float32))
    allocated = manager.pool.allocated
    del again
    assert manager.pool.allocated == allocated - rounded(4 << 24)
    manager.empty_cache()  # every cached block back to the driver: only blocks in use stay reserved
    assert manager.pool.reserved == manager.pool.allocated
