"""Exercise 2.8 edge case: of equal values, amax keeps the row's first one.

0.0 and -0.0 are equal, so which one a max returns shows which of equal values it keeps.
The docstring's order keeps the first: each thread folds ``combine(op, acc, a[k])`` from
``k = t`` up (its own first element wins a tie), stores it in ``partial[t]``, and the tree
sets ``partial[t] = combine(op, partial[t], partial[t + s])`` (the lower thread wins), so
thread 0's first element, the row's first, is the result. Here each row holds zeros only,
its first element of one sign (at random) and every other of the other sign: any other
order (an accumulator folded in after the element, the partials stored one place off, the
tree's operands swapped) returns the other sign. Rows are longer than two rounds of the
block, so every thread folds more than one element.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from minikernel.kernels import launch, sizes
from minikernel.kernels.scalar_ops import MAX
from tests.ch02.strategies import blank_like_contiguous
from tests.ch02.test_gpu_kernels import copy_back, gpu_args


def _signed_zero_rows(rows: int, length: int, seed: int) -> torch.Tensor:
    first = torch.randint(0, 2, (rows, 1), generator=torch.Generator().manual_seed(seed)).bool()
    negative = torch.cat([first, (~first).expand(rows, length - 1)], dim=1)
    return torch.where(negative, -0.0, 0.0).double()


@pytest.mark.exercise("2.8")
@pytest.mark.parametrize("transposed", [False, True], ids=["rows", "T"])
def test_gpu_amax_keeps_the_first_of_equal_values(transposed):
    length = 2 * sizes.REDUCE_THREADS + 3
    t = _signed_zero_rows(6, length, 51)
    if transposed:
        t = t.t().contiguous().t()  # the same values, rows strided
    expected_sign = torch.signbit(t[:, :1])  # the row's first element
    out = blank_like_contiguous((6, 1), t.dtype)
    o_storage, o_shape, o_strides, o_offset = gpu_args(out)
    a_storage, a_shape, a_strides, a_offset = gpu_args(t)
    launch.kernel("cuda", "reduce").launch(out.numel(), sizes.REDUCE_THREADS, MAX, np.float64(-np.inf), o_storage,
                                           o_shape, o_strides, o_offset, a_storage, a_shape, a_strides, a_offset, 1)
    copy_back(o_storage, out)
    assert bool((out == 0).all()), f"amax of rows of zeros gave {out.flatten().tolist()}"
    assert torch.equal(torch.signbit(out), expected_sign), (
        f"amax over rows of 0.0 and -0.0: signs {torch.signbit(out).int().flatten().tolist()} (1: -0.0), the rows' "
        f"first elements' {expected_sign.int().flatten().tolist()}: fold with combine(op, acc, a[k]) and "
        "combine(op, partial[t], partial[t + s]), which keep the first of equal values")
