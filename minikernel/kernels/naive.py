"""A naive GPU matrix product, for comparison with the tiled one (exercise 2.9).

Each thread computes one output element by reading a whole row of ``a`` and a whole
column of ``b`` straight from global memory: ``inner`` reads of each per thread, so
every element of ``a`` is read ``m`` times and every element of ``b`` ``n`` times.
The tiled kernel reads each ``TILE`` times less often. 2-D only, plain stride
arithmetic: this is a reference point, not an exercise.
"""
from __future__ import annotations

from .. import simulator
from ..numba_setup import cuda
from ..strides import Storage, Strides

_compiled = None


def naive_matmul(out: Storage, out_strides: Strides, a: Storage, a_strides: Strides,
                 b: Storage, b_strides: Strides, n: int, m: int, inner: int) -> None:
    """``out[i, j] = sum_k a[i, k] * b[k, j]``, one thread per ``(i, j)``, no shared memory."""
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row < n and col < m:
        acc = 0
        for k in range(inner):
            acc += a[row * a_strides[0] + k * a_strides[1]] * b[k * b_strides[0] + col * b_strides[1]]
        out[row * out_strides[0] + col * out_strides[1]] = acc


def launch(grid, block, *args) -> None:
    """``naive_matmul[grid, block](*args)``, compiled on first use."""
    global _compiled
    if _compiled is None:
        _compiled = cuda.jit(naive_matmul)
    with simulator.kernel_launch():
        _compiled[grid, block](*args)
