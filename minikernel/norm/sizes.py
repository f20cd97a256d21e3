"""Launch sizes of the LayerNorm kernels (module-level ints: numba freezes them as constants).

On numba's CUDA simulator every CUDA thread is a Python thread, so the block is
small there; a kernel must work for any power of two.
"""
from __future__ import annotations

from ..device import SIMULATOR

#: Rows per parallel task of the CPU backward kernel: each task sums its rows'
#: contributions to ``dw`` and ``db`` in a private buffer (no two tasks write the same memory).
CPU_ROWS_PER_TASK = 64

#: Threads per block of the GPU kernels (one block per row for the forward and
#: ``dx``; one thread per column for ``dw``/``db``). A power of two: the tree halves it.
# On a GPU, 128 threads per row: each thread has more columns of a row in flight and
# the tree has one step less (the README's measurement log has 128 against 256).
NORM_THREADS = 8 if SIMULATOR else 128
