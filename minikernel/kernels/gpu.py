"""Exercises 2.6–2.9: GPU kernels, compiled with ``numba.cuda.jit``.

Same arguments as the CPU kernels in ``cpu.py`` (flat storages, int64 shape and
stride arrays, offsets), but the parallelism is *implicit*: the host launches a grid
of thread blocks (``kernel[blocks, threads_per_block](...)``, done for you in
``kernels/launch.py``) and every thread runs the whole function. A thread finds its
work from its coordinates: ``cuda.blockIdx``, ``cuda.threadIdx``, ``cuda.blockDim``.

Inside a kernel you can call, compiled with ``cuda.jit(device=True)``:
``index_to_position`` (your 1.2), ``to_index_into`` (your 2.1), ``apply_unary``,
``apply_binary`` and ``combine`` (``kernels/scalar_ops.py``).

What GPU code cannot do: allocate (index buffers are
``cuda.local.array(MAX_DIMS, np.int64)``, sliced to ``[:ndim]``), raise exceptions
(numba drops ``raise`` outside debug mode; the host checks everything first),
or return values (write into ``out``). Threads of one block share fast
``cuda.shared.array`` memory and wait for each other at ``cuda.syncthreads()`` —
which every thread of the block must reach, so never put it inside an ``if`` that
only some threads take.

Without a GPU these kernels run on numba's CUDA simulator: one Python thread per
CUDA thread, so tests use tiny sizes (``sizes.py`` sets small blocks there).
"""
from __future__ import annotations

from typing import Union

import numpy as np
from numba import cuda  # noqa: F401 - for your kernels (the simulator swaps it in)

from ..course.exercise import exercise
from ..strides import Shape, Storage, Strides
from . import jit
from .sizes import MAX_DIMS, REDUCE_THREADS, THREADS, TILE  # noqa: F401 - for your kernels

# The helpers, compiled with cuda.jit(device=True) (see the module docstring).
index_to_position = jit.helper("gpu", "index_to_position")
to_index_into = jit.helper("gpu", "to_index_into")
apply_unary = jit.helper("gpu", "apply_unary")
apply_binary = jit.helper("gpu", "apply_binary")
combine = jit.helper("gpu", "combine")

Scalar = Union[int, float]  #: a value of the output's dtype, e.g. np.float32(0)

__all__ = ["gpu_map", "gpu_zip", "gpu_reduce", "gpu_matmul", "cuda", "np"]


@exercise("2.6")
def gpu_map(op: int, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
            a: Storage, a_strides: Strides, a_offset: int) -> None:
    """One thread per output element: ``out[i] = apply_unary(op, a[i])``.

    Launched with ``ceil(n / THREADS)`` blocks of ``THREADS`` threads, ``n =
    prod(out_shape)``. Thread ``i = blockIdx.x * blockDim.x + threadIdx.x`` handles
    ordinal ``i`` if ``i < n`` (the last block may have spare threads). Turn the
    ordinal into an index with ``to_index_into`` (into a ``cuda.local.array``), then
    into one position per storage with ``index_to_position``. ``a`` is already
    broadcast to ``out_shape`` (stride 0 where it repeats).

    Use ``blockDim.x``, not ``THREADS``: the kernel must work for any block size
    (the tests launch it with 8 and 32 threads per block too).

    Consecutive threads get consecutive ordinals, and the host orders dimensions so
    consecutive ordinals are (where possible) adjacent in memory: a warp's 32 reads
    then fall into a few memory transactions (*coalesced*).

    Matches: ``torch.neg/exp/log/relu/sigmoid(x)`` on a ``"cuda"`` minikernel tensor.
    """
    # TODO(2.6): ≈8 lines
    raise NotImplementedError("exercise 2.6 (gpu_map) is not implemented yet")


@exercise("2.7")
def gpu_zip(op: int, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
            a: Storage, a_strides: Strides, a_offset: int,
            b: Storage, b_strides: Strides, b_offset: int) -> None:
    """One thread per output element: ``out[i] = apply_binary(op, a[i], b[i])``.

    Exercise 2.6 with two inputs, both already broadcast to ``out_shape``; like it,
    correct for any block size (``blockDim.x``).

    Matches: ``torch.add/sub/mul/div(x, y)`` with broadcasting on ``"cuda"`` tensors.
    """
    # TODO(2.7): ≈9 lines
    raise NotImplementedError("exercise 2.7 (gpu_zip) is not implemented yet")


@exercise("2.8")
def gpu_reduce(op: int, identity: Scalar, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_shape: Shape, a_strides: Strides, a_offset: int, dim: int) -> None:
    """Shared-memory tree reduction of dimension ``dim``: one block per output element.

    Launched with ``prod(out_shape)`` blocks of ``REDUCE_THREADS`` threads (a power of
    two); ``out_shape`` is ``a_shape`` with size 1 at ``dim``. Block ``j`` computes
    ``out[j]``:

    1. each thread ``t`` folds the elements ``k = t, t + REDUCE_THREADS, ...`` of the
       row with ``combine``, starting from ``identity`` (so a thread with no
       elements contributes the identity);
    2. it stores its partial result in ``partial = cuda.shared.array(REDUCE_THREADS,
       out.dtype)`` and every thread waits at ``cuda.syncthreads()``;
    3. halve: for ``s = REDUCE_THREADS // 2, ..., 1``, threads ``t < s`` set
       ``partial[t] = combine(op, partial[t], partial[t + s])``, and all threads
       synchronize after each step;
    4. thread 0 writes ``partial[0]`` to ``out``.

    Every thread reaches every ``cuda.syncthreads()`` (the same number of calls in
    each thread of a block). Traffic budget, measured on the simulator: each input
    element is read from global memory once, no thread reads more than
    ``ceil(a_shape[dim] / REDUCE_THREADS)`` of them, no thread reads more than
    ``2 * log2(REDUCE_THREADS) + 1`` shared values (two per halving step, one for the
    result), and each output is written once.

    Matches: ``torch.sum(x, dim, keepdim=True)`` and ``torch.amax(x, dim, keepdim=True)``.
    """
    # TODO(2.8): ≈18 lines
    raise NotImplementedError("exercise 2.8 (gpu_reduce) is not implemented yet")


@exercise("2.9")
def gpu_matmul(out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_strides: Strides, a_offset: int,
               b: Storage, b_strides: Strides, b_offset: int, inner: int) -> None:
    """Tiled matrix product in shared memory: ``out[..., i, j] = sum_k a[..., i, k] * b[..., k, j]``.

    Launched with blocks of ``TILE x TILE`` threads on a grid of
    ``(ceil(m / TILE), ceil(n / TILE), batches)``: thread ``(tx, ty)`` of block
    ``(bx, by, bz)`` computes ``out[bz-th batch, by*TILE + ty, bx*TILE + tx]``.
    Shapes and strides as in exercise 2.5 (batch dimensions already broadcast).

    Walk ``inner`` in steps of ``TILE``. At each step every thread loads *one*
    element of ``a`` and one of ``b`` into two ``cuda.shared.array((TILE, TILE),
    out.dtype)`` tiles (0 outside the matrices), ``cuda.syncthreads()``, then adds
    ``TILE`` products read from shared memory, and synchronizes again before the
    next step overwrites the tiles. Each global element is read ``TILE`` times fewer
    than by a thread that reads a whole row and column itself. Threads outside the
    output still load and synchronize; only the final write is guarded.

    Traffic budget, measured on the simulator: about ``2 * inner / TILE`` global reads
    per output element (a block reads its ``TILE`` rows of ``a`` and ``TILE`` columns
    of ``b`` once per step, so ``a`` is read ``ceil(m / TILE)`` times in all and ``b``
    ``ceil(n / TILE)`` times) and one write; every thread of a block calls
    ``cuda.syncthreads()`` equally often.

    Matches: ``torch.matmul(x, y)`` for ``x.dim() >= 2`` and ``y.dim() >= 2`` on
    ``"cuda"`` tensors.
    """
    # TODO(2.9): ≈25 lines
    raise NotImplementedError("exercise 2.9 (gpu_matmul) is not implemented yet")
