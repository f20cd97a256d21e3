"""Exercise 3.2 at its edge: an empty broadcast dimension (1 against 0) sums to a 1, as
``torch.Tensor.sum_to_size`` does (and as autograd gives an input broadcast against an empty one)."""
from __future__ import annotations

import pytest
import torch

from minikernel import Tensor
from minikernel.autograd import derivatives as D


@pytest.mark.exercise("3.2")
@pytest.mark.parametrize("full, shape", [((0,), (1,)), ((2, 0), (2, 1)), ((3, 0, 2), (1, 1, 2)), ((4, 0), (1,))])
def test_an_empty_dimension_sums_to_one(full, shape):
    grad = torch.zeros(full, dtype=torch.float64)
    expected = grad.sum_to_size(shape)
    got = D.sum_to_shape(Tensor.from_torch(grad.clone()), shape)
    assert got.shape == tuple(expected.shape), f"shape {got.shape} != torch's {tuple(expected.shape)}"
    torch.testing.assert_close(got.to_torch(), expected)
