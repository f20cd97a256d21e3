"""Chapter 01's printed conclusions about dtype promotion and shared storage, recomputed
against torch with the rule the chapter states written out independently."""
from __future__ import annotations

import pytest
import torch

FLOATS = [torch.float16, torch.float32, torch.float64]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64]


@pytest.mark.parametrize("int_dtype", INTS)
def test_a_python_float_gives_the_default_float(int_dtype):
    assert (torch.tensor([1, 2], dtype=int_dtype) + 2.5).dtype == torch.get_default_dtype() == torch.float32


@pytest.mark.parametrize("int_dtype", INTS)
@pytest.mark.parametrize("zero_d", FLOATS)
def test_a_0d_tensor_of_a_higher_category_keeps_its_own_dtype(int_dtype, zero_d):
    assert (torch.tensor([1, 2], dtype=int_dtype) + torch.tensor(2.5, dtype=zero_d)).dtype == zero_d


@pytest.mark.parametrize("dim_dtype", FLOATS)
@pytest.mark.parametrize("zero_d", FLOATS)
def test_within_a_category_a_0d_tensor_does_not_widen(dim_dtype, zero_d):
    assert (torch.ones(2, dtype=dim_dtype) + torch.tensor(2.5, dtype=zero_d)).dtype == dim_dtype
    widest = max(dim_dtype, zero_d, key=lambda d: torch.finfo(d).bits)
    assert (torch.ones(2, dtype=dim_dtype) + torch.ones(1, dtype=zero_d)).dtype == widest


def test_the_chapter_examples():
    assert (torch.tensor([1], dtype=torch.int8) + torch.tensor([1], dtype=torch.uint8)).dtype == torch.int16
    assert torch.result_type(torch.tensor([1]), 2.5) == torch.float32
    assert torch.result_type(torch.tensor([True]), 7) == torch.int64


def test_a_slice_shares_storage_and_writes_through():
    a = torch.arange(6)
    b = a[2:]
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    b[1] = 0
    assert a.tolist() == [0, 1, 2, 0, 4, 5]
    assert torch.arange(6).reshape(2, 3).stride() == (3, 1)
    assert torch.arange(6).view(3, 2).stride() == (2, 1)
