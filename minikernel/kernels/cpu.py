"""Exercises 2.2–2.5: CPU kernels, compiled with ``numba.njit(parallel=True)``.

Each kernel is a plain Python function over *flat storages* plus headers: shapes
and strides as int64 arrays, offsets as ints. minikernel compiles the active one
with ``numba.njit(parallel=True, error_model="numpy", fastmath={"reassoc", "contract"})``
(see ``kernels/jit.py``), and the host code in ``kernels/launch.py`` has already done
the rest of what writing a kernel involves: error checks, output allocation, dtype
dispatch, broadcasting (inputs arrive *expanded*: the output's shape, stride 0 along
broadcast dimensions), and ordering dimensions so the last one is the fastest in
memory.

Inside a kernel, these names are compiled helpers you can call:

* ``index_to_position(index, strides, offset)`` — your exercise 1.2;
* ``to_index_into(ordinal, shape, out_index)`` — your exercise 2.1;
* ``apply_unary(op, x)``, ``apply_binary(op, x, y)``, ``combine(op, acc, x)`` — the
  per-element bodies (``kernels/scalar_ops.py``), selected by an integer op code.

Parallelism on the CPU is explicit: ``for t in prange(n_tasks)`` runs the tasks on
all cores; everything inside one task runs sequentially. Keep tasks independent
(each writes its own output elements) and allocate index buffers per task, not per
element. An exception raised by a function you call inside a ``prange`` loop does
not reach the caller (a ``raise`` written in the loop itself makes numba give up on
parallelizing it), much like in a GPU kernel: check inputs on the host, never in
the kernel.

Speed tip (used by the references): numba checks every signed array index for
"negative means from the end", which stops loops from being vectorized. Storage
positions are never negative; ``storage[np.uint64(pos)]`` tells numba so.
"""
from __future__ import annotations

from typing import Union

import numpy as np
from numba import prange  # noqa: F401 - for your kernels

from ..course.exercise import exercise
from ..strides import Shape, Storage, Strides
from . import jit
from .sizes import CPU_CHUNK, CPU_TILE_K, CPU_TILE_M, CPU_TILE_N, MAX_DIMS  # noqa: F401 - for your kernels

# The helpers, compiled with numba.njit (see the module docstring).
index_to_position = jit.helper("cpu", "index_to_position")
to_index_into = jit.helper("cpu", "to_index_into")
apply_unary = jit.helper("cpu", "apply_unary")
apply_binary = jit.helper("cpu", "apply_binary")
combine = jit.helper("cpu", "combine")

Scalar = Union[int, float]  #: a value of the output's dtype, e.g. np.float32(0)

__all__ = ["cpu_map", "cpu_zip", "cpu_reduce", "cpu_matmul", "np", "prange"]


@exercise("2.2")
def cpu_map(op: int, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
            a: Storage, a_strides: Strides, a_offset: int) -> None:
    """``out[i] = apply_unary(op, a[i])`` for every index ``i`` of ``out_shape``, in parallel.

    ``a`` has already been broadcast to ``out_shape`` (its ``a_strides`` are 0 along
    broadcast dimensions), so one multi-index addresses both: its storage position
    in ``out`` is ``index_to_position(index, out_strides, out_offset)`` and in ``a``
    ``index_to_position(index, a_strides, a_offset)``.

    Split the ``n = prod(out_shape)`` elements into tasks of ``CPU_CHUNK``
    consecutive ordinals and ``prange`` over the tasks: task ``t`` covers ordinals
    ``t * CPU_CHUNK`` up to ``min(n, (t + 1) * CPU_CHUNK)``, so there are
    ``ceil(n / CPU_CHUNK)`` tasks and the last may be partial (the tests use tensors
    of more than three chunks). In each task allocate one
    index buffer (``np.empty(len(out_shape), np.int64)``), then walk the task in
    *row segments*: for the segment starting at ordinal ``i``, fill the buffer with
    ``to_index_into(i, out_shape, index)``, compute both start positions, and step
    through the rest of the row (up to the task's end) by the last dimension's
    strides — index arithmetic once per row, not once per element.

    Matches: ``torch.neg/exp/log/relu/sigmoid(x)`` (op codes in ``scalar_ops.UNARY``),
    through ``minikernel``'s ``x.neg()``, ``x.exp()``, ... on a CPU tensor.
    """
    # TODO(2.2): ≈15 lines
    raise NotImplementedError("exercise 2.2 (cpu_map) is not implemented yet")


@exercise("2.3")
def cpu_zip(op: int, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
            a: Storage, a_strides: Strides, a_offset: int,
            b: Storage, b_strides: Strides, b_offset: int) -> None:
    """``out[i] = apply_binary(op, a[i], b[i])`` for every index ``i`` of ``out_shape``.

    Exercise 2.2 with two inputs. Both are already broadcast to ``out_shape``: a
    dimension that was size 1 (or missing) in ``a`` has stride 0 in ``a_strides``, so
    every output index reads the same element of ``a`` along it. Same tasks, same
    row segments; three positions per segment instead of two.

    Matches: ``torch.add/sub/mul/div(x, y)`` with broadcasting (``x + y``, ``x - y``,
    ``x * y``, ``x / y`` on minikernel CPU tensors).
    """
    # TODO(2.3): ≈17 lines
    raise NotImplementedError("exercise 2.3 (cpu_zip) is not implemented yet")


@exercise("2.4")
def cpu_reduce(op: int, identity: Scalar, out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_shape: Shape, a_strides: Strides, a_offset: int, dim: int) -> None:
    """Fold dimension ``dim`` of ``a``: ``out[j] = combine(op, ...combine(op, identity, a[j, 0]), ..., a[j, K-1])``.

    ``out_shape`` is ``a_shape`` with ``out_shape[dim] == 1`` (keepdim layout), and
    ``K = a_shape[dim]`` (possibly 0: then ``out[j] = identity``). ``prange`` over the
    output elements (or over groups of them, so one index buffer serves a group);
    for each, get its index with ``to_index_into``, its position in ``out``, and the
    position of ``a[j, 0]`` (the same index: ``index[dim]`` is 0). Then step ``K``
    times by ``a_strides[dim]``, folding with ``combine``.

    ``identity`` is 0 for SUM and -inf (or the smallest int64) for MAX, already of
    the output's dtype; start the accumulator from it. Fold as ``combine(op, acc, x)``
    (accumulator first): for MAX of equal values (``0.0`` and ``-0.0``) torch keeps the
    first one met, on every walk. Stay inside every array you index, your own buffers
    included (an index buffer, a strip of accumulators): numba checks no index, so one
    past the end writes into whatever memory follows; the tests compile your kernel
    with ``boundscheck=True`` to find it.

    Speed (optional): stepping by ``a_strides[dim]`` reads one float per cache line
    when ``dim`` is not the closest-packed dim (``sum(dim=0)`` of a row-major matrix),
    about 10x slower than torch. The reference then sums a strip of outputs side by
    side along the closest-packed kept dim, each step adding a contiguous slice of
    ``a`` (``sizes.CPU_REDUCE_STRIP`` accumulators). Along contiguous rows it sums four
    rows side by side, one from each quarter of a task's rows: four streams of memory, each
    reading on where it stopped, which the CPU's prefetcher follows (rows ``j .. j+3`` side
    by side would start four new streams every four rows).
    ``python -m minikernel bench -k reduce`` times it.

    Matches: ``torch.sum(x, dim, keepdim=True)`` and ``torch.amax(x, dim, keepdim=True)``.
    """
    # TODO(2.4): ≈12 lines
    raise NotImplementedError("exercise 2.4 (cpu_reduce) is not implemented yet")


@exercise("2.5")
def cpu_matmul(out: Storage, out_shape: Shape, out_strides: Strides, out_offset: int,
               a: Storage, a_strides: Strides, a_offset: int,
               b: Storage, b_strides: Strides, b_offset: int, inner: int) -> None:
    """Batched matrix product, blocked: ``out[..., i, j] = sum_k a[..., i, k] * b[..., k, j]``.

    ``out_shape`` is ``(*batch, n, m)``; ``a`` is ``(*batch, n, inner)`` and ``b``
    ``(*batch, inner, m)``, their batch dimensions already broadcast (stride 0 where
    a batch dimension was size 1), so ``a_strides`` and ``b_strides`` have
    ``len(out_shape)`` entries too.

    Cut each output matrix into ``CPU_TILE_M x CPU_TILE_N`` tiles and ``prange`` over
    (batch, tile row, tile column). For a tile, walk ``inner`` in blocks of
    ``CPU_TILE_K``: copy the block of ``a`` (rows of the tile) and of ``b`` (columns
    of the tile, stored transposed so each column is contiguous) into small local
    arrays, then accumulate dot products from them into a local ``acc`` tile. Write
    ``acc`` to ``out`` at the end: it sums over *all* the blocks of ``inner`` (the
    tests use ``inner`` above three blocks, and ``n``, ``m`` above three tiles and
    not multiples of them). The copies stay in cache while they are reused
    ``CPU_TILE_N`` (or ``CPU_TILE_M``) times — the CPU's version of GPU shared memory.
    (The reference also computes 4 x 4 outputs per inner loop, 16 sums kept in local
    variables, so each loaded value serves four products.)
    Find each batch's start with ``to_index_into`` and positions with
    ``index_to_position``; ``inner == 0`` gives zeros. Every index stays inside its
    array (a copy past the last row or column of a partial tile reads memory that
    is not the matrix's; the tests compile your kernel with numba's bounds checks).

    Matches: ``torch.matmul(x, y)`` for ``x.dim() >= 2`` and ``y.dim() >= 2``
    (``x @ y`` on minikernel CPU tensors).
    """
    # TODO(2.5): ≈35 lines
    raise NotImplementedError("exercise 2.5 (cpu_matmul) is not implemented yet")
