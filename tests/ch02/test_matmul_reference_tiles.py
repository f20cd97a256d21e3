"""The matmul at the reference's own tile sizes (``kernels/cpu_tiles.py``), which follow
this machine's caches rather than the exercise's ``CPU_TILE_*``.

Every size spans at least three of those tiles or blocks and ends in a partial one;
a product smaller than ``tasks`` tiles is split into smaller tiles, so one case is
one tile with odd sides. Operands come row-major, transposed and strided, which
takes each of the reference's copy loops. Integer values: any summation order is exact.
"""
from __future__ import annotations

import pytest
import torch

from minikernel.kernels import launch
from minikernel.kernels.cpu_tiles import REFERENCE_TILES as T
from tests.ch02.strategies import blank_like_contiguous, kernel_args
from tests.ch02.test_cpu_kernels import _random

SHAPES = [(3, 3 * T.k + 5, 5),                 # k: four blocks
          (3 * T.m + 3, 9, 3 * T.n + 1),       # n, m: four tiles each
          (T.m - 6, 3 * T.k + 1, T.n // 2 + 2)]  # one tile, split for the threads, partial on both sides


def _operand(shape: tuple[int, int], layout: str, seed: int) -> torch.Tensor:
    rows, cols = shape
    if layout == "row-major":
        return _random((rows, cols), torch.int64, seed).double()
    if layout == "transposed":
        return _random((cols, rows), torch.int64, seed).double().t()
    return _random((rows, 2 * cols), torch.int64, seed).double()[:, ::2]  # every other column


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("layouts", [("row-major", "row-major"), ("transposed", "transposed"),
                                     ("strided", "strided")], ids="-".join)
@pytest.mark.parametrize("n, k, m", SHAPES, ids=str)
def test_cpu_matmul_past_three_reference_tiles(n, k, m, layouts):
    x, y = _operand((n, k), layouts[0], 20), _operand((k, m), layouts[1], 21)
    expected = torch.mm(x, y)
    out = blank_like_contiguous(expected.shape, x.dtype)
    o_storage, shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(x)
    b_storage, _, b_strides, b_offset = kernel_args(y)
    launch.kernel("cpu", "matmul")(o_storage, shape, o_strides, o_offset, a_storage, a_strides, a_offset,
                                   b_storage, b_strides, b_offset, k)
    assert torch.equal(out, expected)
