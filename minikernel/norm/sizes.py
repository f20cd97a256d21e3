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
# On a GPU, 64 threads per row: the reference forward keeps a row of up to 1024 columns
# in registers, 16 columns per thread, and ran fastest so (docs/benchmarks.md, *On a GPU*: 64
# against 32 and 128 threads; 128 against 256 for the exercise's three passes).
NORM_THREADS = 8 if SIMULATOR else 64

#: Bytes the reference GPU forward loads at once (four float32 or two float64 columns):
#: ``native.py`` hands the GPU kernels rows that start on a multiple of it.
WIDE_LOAD = 16
