"""Exercise 2.1: to_index_into, in Python and compiled with numba as the kernels call it."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from minikernel.kernels import cpu, index
from tests.helpers import shapes


def _torch_index(ordinal: int, shape) -> list[int]:
    return [int(i) for i in torch.unravel_index(torch.tensor(ordinal), shape)]


@pytest.mark.exercise("2.1")
@given(shapes(max_dims=5).filter(lambda s: 0 < math.prod(s) and len(s) > 0), st.data())
def test_to_index_into_matches_unravel_index(shape, data):
    ordinal = data.draw(st.integers(0, math.prod(shape) - 1))
    buffer = np.full(len(shape) + 2, -7, dtype=np.int64)  # two extra slots must stay untouched
    result = index.to_index_into(ordinal, np.array(shape, np.int64), buffer)
    assert result is None, "write into out_index; return nothing"
    assert buffer[:len(shape)].tolist() == _torch_index(ordinal, shape)
    assert buffer[len(shape):].tolist() == [-7, -7], "wrote past len(shape)"


@pytest.mark.exercise("2.1")
@settings(max_examples=20)
@given(shapes(max_dims=4).filter(lambda s: 0 < math.prod(s) and len(s) > 0), st.data())
def test_to_index_into_compiles_for_the_cpu_kernels(shape, data):
    ordinal = data.draw(st.integers(0, math.prod(shape) - 1))
    buffer = np.zeros(len(shape), dtype=np.int64)
    cpu.to_index_into(ordinal, np.array(shape, np.int64), buffer)  # numba.njit-compiled
    assert buffer.tolist() == _torch_index(ordinal, shape)


@pytest.mark.exercise("2.1")
def test_to_index_into_seed_example():
    buffer = np.zeros(3, dtype=np.int64)
    index.to_index_into(7, (2, 3, 4), buffer)
    assert buffer.tolist() == _torch_index(7, (2, 3, 4)) == [0, 1, 3]
