"""Exercise 2.9 edge case: the tiles' entries past the inner dimension are set to zero.

In the last block of the inner dimension (``inner`` not a multiple of ``TILE``), the
threads with ``k0 + tx >= inner`` load nothing into ``a_tile`` and those with
``k0 + ty >= inner`` nothing into ``b_tile``. Those entries must be set to 0: left alone,
they keep the previous block's values (or whatever the shared memory held), which
meet a zero of the other tile, and ``x * 0`` is 0 only for finite ``x``. Here one input
holds an infinity in the first block, at a place that the last, partial block leaves
unloaded: torch's product there is an infinity, a tile not cleared gives ``inf * 0 = nan``.
"""
from __future__ import annotations

import math

import pytest
import torch

from minikernel.kernels import launch, sizes
from tests.ch02.strategies import assert_values, blank_like_contiguous
from tests.ch02.test_cpu_kernels import _random
from tests.ch02.test_gpu_kernels import copy_back, gpu_args


@pytest.mark.exercise("2.9")
@pytest.mark.parametrize("operand", ["a", "b"])
def test_gpu_matmul_clears_the_tiles_past_the_inner_dimension(operand):
    n, inner, m = 3, sizes.TILE + 1, 2  # the second block of inner loads one column of a (one row of b)
    x, y = _random((1, n, inner), torch.float64, 61), _random((1, inner, m), torch.float64, 62)
    y = torch.where(y == 0, 1.0, y)
    x = torch.where(x == 0, 1.0, x)  # no zero that would make the infinity's product nan in torch too
    if operand == "a":
        x[0, 0, 1] = math.inf  # read in the first block; column 1 is past inner in the second
    else:
        y[0, 1, 0] = math.inf
    expected = torch.matmul(x, y)
    assert bool(torch.isinf(expected).any()) and not bool(torch.isnan(expected).any())
    out = blank_like_contiguous(expected.shape, torch.float64)
    o_storage, shape, o_strides, o_offset = gpu_args(out)
    a_storage, _, a_strides, a_offset = gpu_args(x)
    b_storage, _, b_strides, b_offset = gpu_args(y)
    grid = (math.ceil(m / sizes.TILE), math.ceil(n / sizes.TILE), 1)
    launch.kernel("cuda", "matmul").launch(grid, (sizes.TILE, sizes.TILE), o_storage, shape, o_strides, o_offset,
                                           a_storage, a_strides, a_offset, b_storage, b_strides, b_offset, inner)
    copy_back(o_storage, out)
    assert_values(out, expected)
