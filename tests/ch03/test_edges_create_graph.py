"""Exercise 3.3 with create_graph=True: the engine records the backward pass.

Only exercises 3.1–3.3 are reached (sum's derivative is built in), so a
run_backward that ignores create_graph fails here, at 3.3, not first at 3.7.
"""
from __future__ import annotations

import pytest
import torch

from minikernel import Tensor


@pytest.mark.exercise("3.3")
def test_create_graph_records_the_backward_pass():
    # A gradient that itself requires grad, pushed through sum's backward (an expand):
    # recorded only when the engine runs with grad mode on.
    results = {}
    for lib, make in (("torch", lambda a: torch.tensor(a, dtype=torch.float64)),
                      ("minikernel", lambda a: Tensor.from_torch(torch.tensor(a, dtype=torch.float64)))):
        x = make([[0.5, -1.0, 2.0], [1.5, 0.0, 3.0]]).requires_grad_()
        v = make(2.0).requires_grad_()
        x.sum().backward(v, create_graph=True)
        assert x.grad.requires_grad and x.grad.grad_fn is not None, f"{lib}: the gradient was not recorded"
        x.grad.sum().backward()  # d/dv of sum(expand(v)) = number of elements
        results[lib] = (v.grad.item(), tuple(x.grad.shape))
    assert results["minikernel"] == results["torch"]


@pytest.mark.exercise("3.3")
def test_without_create_graph_the_gradient_is_a_plain_tensor():
    x_torch = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    x_mine = Tensor.from_torch(x_torch.detach()).requires_grad_()
    for x in (x_torch, x_mine):
        x.sum().backward()
        assert not x.grad.requires_grad and x.grad.grad_fn is None
    assert torch.allclose(x_mine.grad.to_torch(), x_torch.grad, rtol=1e-12, atol=0)
