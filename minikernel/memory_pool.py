"""A pool of freed device blocks, kept for the next allocation of the same size.

Asking the CUDA driver for memory is slow: ``cuMemAlloc`` of 256 MiB took 0.25–0.36 ms
on an H200, longer than a kernel takes to write those 256 MiB (docs/benchmarks.md, *On a GPU*).
PyTorch therefore keeps the blocks its tensors free and hands them out again
(``torch.cuda.memory_allocated()`` counts the bytes tensors hold,
``torch.cuda.memory_reserved()`` those the allocator holds, cached blocks included;
``torch.cuda.empty_cache()`` gives the cached ones back to the driver). This pool is
the bookkeeping of the same idea, without the driver: ``minikernel.cuda_allocator``
puts it between numba and the driver on a real GPU.

Sizes are rounded up, so that requests of nearby sizes share blocks: to a multiple of
512 bytes below 1 MiB (PyTorch rounds every request so), of 2 MiB from 1 MiB on (as
PyTorch rounds its large blocks). Unlike PyTorch's allocator, a block is reused whole,
never split or merged with its neighbours.

Example::

    >>> pool = BlockPool()
    >>> pool.take(1000)                 # nothing cached: allocate 1024 bytes yourself
    (1024, None)
    >>> pool.give(1024, "block A")      # the tensor that held it was freed
    >>> pool.take(700)                  # the same size class: the cached block again
    (1024, 'block A')
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Hashable

#: Below this size, blocks are rounded to ``SMALL_ROUND`` bytes; from it on, to ``LARGE_ROUND``.
SMALL = 1 << 20
SMALL_ROUND = 512
LARGE_ROUND = 2 << 20


def rounded(size: int) -> int:
    """The block size that serves a request of ``size`` bytes (at least one ``SMALL_ROUND``)."""
    if size < 0:
        raise ValueError(f"a block cannot have a negative size, got {size}")
    step = SMALL_ROUND if size < SMALL else LARGE_ROUND
    return max(step, -(-size // step) * step)


class BlockPool:
    """Cached blocks by size, and the bytes handed out and held.

    A block is anything the driver returned (a pointer); the pool only stores it.

    Attributes:
        allocated (int): bytes in blocks currently handed out (``memory_allocated``).
        reserved (int): bytes in all blocks the pool knows of, handed out or cached
            (``memory_reserved``).
    """

    def __init__(self) -> None:
        self._cached: dict[int, list[Any]] = defaultdict(list)
        self.allocated = 0
        self.reserved = 0

    def take(self, size: int) -> tuple[int, Any]:
        """``(block_size, block)``: a cached block for ``size`` bytes, or ``None`` as the block
        when the caller must allocate ``block_size`` bytes itself (undo with :meth:`forget` if that fails)."""
        block_size = rounded(size)
        blocks = self._cached[block_size]
        block = blocks.pop() if blocks else None
        if block is None:
            self.reserved += block_size
        self.allocated += block_size
        return block_size, block

    def give(self, block_size: int, block: Hashable) -> None:
        """Take back a block handed out by :meth:`take` (its tensor is gone); keep it for reuse."""
        self._cached[block_size].append(block)
        self.allocated -= block_size

    def forget(self, block_size: int) -> None:
        """Undo a :meth:`take` that returned no block, when the caller's own allocation failed."""
        self.allocated -= block_size
        self.reserved -= block_size

    def drain(self) -> list[Any]:
        """Every cached block, removed from the pool (the caller frees them: ``empty_cache``)."""
        blocks = [b for size_blocks in self._cached.values() for b in size_blocks]
        self.reserved -= sum(size * len(size_blocks) for size, size_blocks in self._cached.items())
        self._cached.clear()
        return blocks
