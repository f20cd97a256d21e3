"""Exercises 2.6 and 2.7 edge cases: in place, each element is processed by exactly one thread.

With ``n`` elements not a multiple of the block size, the last block has threads past
the end. Thread ``i == n`` given work (``i <= n`` instead of ``i < n``) turns ordinal
``n`` into the index ``(0, ..., 0)`` and writes the first element again; a thread index
``blockIdx.x * blockDim.x - threadIdx.x`` covers every element too (negative ordinals wrap
to the last ones), some of them twice. Into a separate ``out`` that only writes the same
value twice, but in place (``x.neg_()``, ``x.add_(y)``: ``out`` is ``a``) the second
thread reads the element the first one already changed, and changes it once more.
"""
from __future__ import annotations

import math

import pytest
import torch

from minikernel.kernels import launch
from minikernel.kernels.scalar_ops import BINARY, UNARY
from tests.ch02.strategies import assert_values
from tests.ch02.test_cpu_kernels import _random
from tests.ch02.test_gpu_kernels import copy_back, gpu_args

BLOCK_SIZES = [8, 32]


def _partial_last_block(threads: int) -> torch.Tensor:
    t = _random((7, 11), torch.float64, 41).t()  # 77 elements: several blocks, the last partial
    assert t.numel() % threads and t.numel() > threads
    return t


@pytest.mark.exercise("2.6")
@pytest.mark.parametrize("threads", BLOCK_SIZES)
def test_gpu_map_in_place_with_a_partial_last_block(threads):
    t = _partial_last_block(threads)
    expected = torch.neg(t)
    storage, shape, strides, offset = gpu_args(t)
    launch.kernel("cuda", "map").launch(math.ceil(t.numel() / threads), threads, UNARY["neg"],
                                        storage, shape, strides, offset, storage, strides, offset)
    copy_back(storage, t)
    assert_values(t, expected)


@pytest.mark.exercise("2.7")
@pytest.mark.parametrize("threads", BLOCK_SIZES)
def test_gpu_zip_in_place_with_a_partial_last_block(threads):
    t = _partial_last_block(threads)
    u = _random(t.shape[-1:], torch.float64, 42)  # broadcast over the rows: stride 0
    expected = t + u
    storage, shape, strides, offset = gpu_args(t)
    b_storage, _, b_strides, b_offset = gpu_args(u.expand(t.shape))
    launch.kernel("cuda", "zip").launch(math.ceil(t.numel() / threads), threads, BINARY["add"],
                                        storage, shape, strides, offset, storage, strides, offset,
                                        b_storage, b_strides, b_offset)
    copy_back(storage, t)
    assert_values(t, expected)
