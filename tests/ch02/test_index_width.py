"""Chapter 02: the strided gather with 32-bit and 64-bit index arithmetic
(``minikernel/kernels/index_width.py``), checked against ``torch.as_strided(...).contiguous()``."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest
import torch

from minikernel.kernels import index_width

CASES = [((3, 4), (1, 5), 2), ((2, 3, 4), (1, 8, 2), 0), ((4, 0), (1, 4), 0), ((), (), 7), ((5,), (3,), 1),
         ((2, 1, 3), (0, 9, 4), 3), ((1, 1), (1, 1), 0), ((6, 5), (5, 1), 10), ((3, 3), (0, 0), 39)]


@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
@pytest.mark.parametrize("shape, strides, offset", CASES)
def test_gather_matches_torch(width, dtype, shape, strides, offset):
    source = torch.arange(40).to(dtype)
    got = index_width.run(width, source.numpy(), shape, strides, offset)
    expected = torch.as_strided(source, shape, strides, offset).contiguous()
    assert got.shape == tuple(expected.shape) and got.dtype == source.numpy().dtype
    np.testing.assert_array_equal(got, expected.numpy())


@pytest.mark.parametrize("width", [32, 64])
def test_gather_random_permutations(width):
    rng = np.random.default_rng(1)
    source = torch.randn(4 * 5 * 6 + 3)
    base = torch.as_strided(source, (4, 5, 6), (30, 6, 1), 3)
    for _ in range(10):
        view = base.permute(*rng.permutation(3).tolist())
        got = index_width.run(width, source.numpy(), view.shape, view.stride(), view.storage_offset())
        np.testing.assert_array_equal(got, view.contiguous().numpy())


def _fits(shape, strides, offset):
    """The rule written out: element count and largest position at most 2**31 - 1."""
    if any(n == 0 for n in shape):
        return True
    largest = offset + sum((n - 1) * s for n, s in zip(shape, strides))
    return math.prod(shape) < 2**31 and largest < 2**31


@pytest.mark.parametrize("shape, strides, offset", [
    ((2**31 - 1,), (1,), 0), ((2**31,), (1,), 0), ((2**31 - 1,), (1,), 1), ((2, 2**30), (2**30, 1), 0),
    ((2, 2**30), (2**30 + 1, 1), 0), ((0, 2**40), (1, 1), 0), ((2**16, 2**15), (1, 2**16), 0), ((), (), 2**31)])
def test_fits_int32(shape, strides, offset):
    assert index_width.fits_int32(shape, strides, offset) == _fits(shape, strides, offset)


def test_32_bit_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="32-bit"):
        index_width.run(32, np.zeros(4, dtype=np.float32), (2**31,), (1,))
    with pytest.raises(ValueError, match="32 or 64"):
        index_width.gather(16)


def test_the_builds_divide_with_their_width():
    for width in (32, 64):
        index_width.run(width, np.arange(12.0), (3, 4), (1, 3))
    assert index_width.instruction_counts(32)["64-bit divisions"] == 0
    assert index_width.instruction_counts(32)["32-bit divisions"] > 0
    assert index_width.instruction_counts(64)["64-bit divisions"] > 0


def test_numba_widens_int32_arithmetic_to_64_bits():
    """The chapter's reason for the intrinsics: numba divides two int32 values in 64 bits."""
    @numba.njit
    def divide(a, b):
        return a // b

    assert divide(np.int32(7), np.int32(2)) == 3
    ir = divide.inspect_llvm(divide.signatures[0])
    assert "sdiv i64" in ir and "sdiv i32" not in ir
