"""Exercise 2.6 edge case: the last block's spare threads do nothing, also in place.

With ``n`` elements not a multiple of the block size, the last block has threads past
the end. Thread ``i == n`` given work (``i <= n`` instead of ``i < n``) turns ordinal
``n`` into the index ``(0, ..., 0)`` and writes the first element again: harmless when
``out`` is a separate buffer (the same value twice), but in place (``x.neg_()``: ``out``
is ``a``) it reads the element the first block already changed, and changes it once more.
"""
from __future__ import annotations

import math

import pytest
import torch

from minikernel.kernels import launch
from minikernel.kernels.scalar_ops import UNARY
from tests.ch02.strategies import assert_values
from tests.ch02.test_cpu_kernels import _random
from tests.ch02.test_gpu_kernels import copy_back, gpu_args


@pytest.mark.exercise("2.6")
@pytest.mark.parametrize("threads", [8, 32])
def test_gpu_map_in_place_with_a_partial_last_block(threads):
    t = _random((7, 11), torch.float64, 41).t()  # 77 elements: several blocks, the last partial
    assert t.numel() % threads and t.numel() > threads
    expected = torch.neg(t)
    storage, shape, strides, offset = gpu_args(t)
    launch.kernel("cuda", "map").launch(math.ceil(t.numel() / threads), threads, UNARY["neg"],
                                        storage, shape, strides, offset, storage, strides, offset)
    copy_back(storage, t)
    assert_values(t, expected)
