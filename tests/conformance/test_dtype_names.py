"""The dtypes under torch's names: ``minikernel.float32`` ... ``minikernel.bool``, each giving
tensors whose dtype prints as torch's does and holds the same values."""
from __future__ import annotations

import pytest
import torch

import minikernel

NAMES = ["float32", "float64", "int32", "int64", "bool"]


@pytest.mark.parametrize("name", NAMES)
def test_each_torch_dtype_name_exists_and_makes_the_same_tensor(name):
    assert hasattr(minikernel, name), f"torch.{name} has no minikernel.{name}"
    values = [0, 1, 2, 0]
    expected = torch.tensor(values, dtype=getattr(torch, name))
    got = minikernel.tensor(values, dtype=getattr(minikernel, name))
    assert str(got.dtype).removeprefix("minikernel.") == str(expected.dtype).removeprefix("torch."), (
        f"minikernel.{name} makes {got.dtype}, torch.{name} makes {expected.dtype}")
    assert torch.equal(torch.from_numpy(got.to_numpy()), expected)


def test_bool_is_bool_underscore():
    assert minikernel.bool is minikernel.bool_
