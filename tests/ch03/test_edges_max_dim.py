"""Exercise 3.6 at its edge: ``max(dim)`` of a 0-d tensor (dim 0 or -1, keepdim or not) sends
the whole gradient back, as in torch."""
from __future__ import annotations

import pytest
import torch

import minikernel as mk


@pytest.mark.exercise("3.6")
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_dim_of_a_zero_dim_tensor(dim, keepdim):
    tx = torch.tensor(2.5, dtype=torch.float64, requires_grad=True)
    tx.max(dim=dim, keepdim=keepdim)[0].backward(torch.tensor(3.0, dtype=torch.float64))
    x = mk.tensor(2.5, dtype=mk.float64, requires_grad=True)
    x.max(dim=dim, keepdim=keepdim)[0].backward(mk.tensor(3.0, dtype=mk.float64))
    assert x.grad is not None and x.grad.shape == tuple(tx.grad.shape), f"grad {x.grad} vs torch's {tx.grad}"
    torch.testing.assert_close(x.grad.to_torch(), tx.grad)
