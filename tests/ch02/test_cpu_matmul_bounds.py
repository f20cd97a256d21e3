"""Exercise 2.5 edge cases: the matmul kernel stays inside every array it indexes.

A task past the last tile, a batch past the last batch or a copy one row past a tile
changes no value the other tests compare when it only writes outside ``out`` or reads
past ``a``: it corrupts whatever memory lies after the array, or multiplies whatever
it finds there into a sum. numba checks no index by default; compiled with
``boundscheck=True`` (and serially: ``prange`` then runs as ``range``, so the error
reaches the caller), any such index raises IndexError.

The shapes take every branch of a tiled kernel, at the exercise's tile sizes
(``sizes.CPU_TILE_*``) and the reference's (``kernels/cpu_tiles.py``): batches
(one broadcast), a product split into smaller tiles for the threads, an inner
dimension of several blocks, rows and columns past one tile, batches of several
tiles each, partial 4 x 4 blocks, and an inner dimension of 0.
"""
from __future__ import annotations

import pytest
import torch

from minikernel.kernels import launch
from minikernel.kernels.cpu_tiles import REFERENCE_TILES as T
from minikernel.kernels.sizes import CPU_TILE_K, CPU_TILE_M, CPU_TILE_N
from tests.ch02.bounds_checked import bounds_checked
from tests.ch02.strategies import assert_values, blank_like_contiguous, kernel_args
from tests.ch02.test_cpu_kernels import _random

TILE_M, TILE_N, TILE_K = max(T.m, CPU_TILE_M), max(T.n, CPU_TILE_N), max(T.k, CPU_TILE_K)

#: (batch of a, batch of b, n, k, m)
CASES = [
    ((3,), (3,), 9, 7, 10),             # batches, partial 4 x 4 blocks
    ((2, 2), (1, 2), 5, 6, 3),          # two batch dims, b broadcast along the first (stride 0)
    ((), (), 6, 5, 7),                  # one small tile, split for the threads
    ((), (), 1, 3, 1),                  # one element: a tile cannot be split below it
    ((), (), 5, 2 * TILE_K + 3, 6),     # three blocks along the inner dimension
    ((), (), TILE_M + 5, 3, TILE_N + 6),  # rows and columns past one tile
    ((2,), (1,), TILE_M + 5, 2, TILE_N + 6),  # batches of several tiles each (task -> batch, tile row, column)
    ((2,), (2,), 4, 0, 5),              # an inner dimension of 0: zeros
]
IDS = ["batched", "broadcast-batch", "split-tile", "one-element", "k-blocks", "past-a-tile", "batched-tiles", "inner-0"]

def _operand(batch: tuple[int, ...], rows: int, cols: int, layout: str, seed: int, k_dim: int) -> torch.Tensor:
    """A ``rows x cols`` operand; "strided": 2 elements apart along the inner dimension ``k_dim``
    (-1 for a, -2 for b), and b column-major, so every copy loop of a tiled kernel is taken
    (the test then writes into a column-major ``out``)."""
    if layout == "row-major":
        return _random((*batch, rows, cols), torch.int64, seed).double()
    if layout == "transposed":
        return _random((*batch, cols, rows), torch.int64, seed).double().transpose(-1, -2)
    if k_dim == -1:
        return _random((*batch, rows, 2 * cols), torch.int64, seed).double()[..., ::2]
    return _random((*batch, cols, 2 * rows), torch.int64, seed).double()[..., ::2].transpose(-1, -2)


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("layout", ["row-major", "transposed", "strided"])
@pytest.mark.parametrize("a_batch, b_batch, n, k, m", CASES, ids=IDS)
def test_cpu_matmul_indexes_no_array_out_of_bounds(a_batch, b_batch, n, k, m, layout):
    launch.kernel("cpu", "matmul").check_implemented()
    kernel = bounds_checked("matmul")
    x, y = _operand(a_batch, n, k, layout, 60, -1), _operand(b_batch, k, m, layout, 61, -2)
    expected = torch.matmul(x, y)
    batch = expected.shape[:-2]
    out = blank_like_contiguous(expected.shape, x.dtype)
    if layout == "strided":  # and out column-major: its rows step by more than 1
        out = blank_like_contiguous((*batch, m, n), x.dtype).transpose(-1, -2)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(x.expand(*batch, n, k))
    b_storage, _, b_strides, b_offset = kernel_args(y.expand(*batch, k, m))
    try:
        kernel(o_storage, o_shape, o_strides, o_offset, a_storage, a_strides, a_offset,
               b_storage, b_strides, b_offset, k)
    except IndexError as err:
        raise AssertionError(
            f"{tuple(x.shape)} @ {tuple(y.shape)} ({layout}): the kernel indexed an array out of its bounds "
            f"({err}); every task, batch, tile row and column, and every index into out, a, b, the headers "
            "and the kernel's own tiles must stay below the array's length") from None
    assert_values(out, expected)
