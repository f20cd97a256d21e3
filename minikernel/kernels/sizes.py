"""Launch sizes shared by the kernels, your code and the references alike.

numba freezes module-level ints into the compiled code as constants, which is
what ``cuda.shared.array((TILE, TILE), ...)`` and ``cuda.local.array(MAX_DIMS, ...)``
need: their sizes must be known when the kernel is compiled.

On numba's CUDA simulator every CUDA thread is a Python thread, so the GPU sizes
are small there (a 4x4 tile still shows the tiling; a 16x16 one would take minutes
to simulate). The kernels must work for any of these values.
"""
from __future__ import annotations

from ..device import SIMULATOR

#: Most dimensions a kernel handles (GPU index buffers are local arrays of this length).
MAX_DIMS = 8

# ---------------------------------------------------------------------------- CPU
#: Elements per parallel task in the CPU map and zip kernels.
CPU_CHUNK = 1 << 14
#: Outputs summed side by side when the CPU reduce walks a kept dim (4 KiB of float32
#: accumulators: they stay in L1 while the reduced dim streams past).
CPU_REDUCE_STRIP = 1024
#: Output tile (rows, columns; both multiples of 4) and inner-dimension block of the
#: CPU matmul. Tall tiles: each copied column of b then serves 256 rows of a.
CPU_TILE_M, CPU_TILE_N, CPU_TILE_K = 256, 64, 256

# ---------------------------------------------------------------------------- GPU
#: Threads per block of the GPU map and zip kernels (one thread per output element).
THREADS = 32 if SIMULATOR else 256
#: Threads per block of the GPU reduce (one block per output element); a power of two.
REDUCE_THREADS = 8 if SIMULATOR else 256
#: Side of the square shared-memory tiles of the GPU matmul (a TILE x TILE block).
TILE = 4 if SIMULATOR else 16
