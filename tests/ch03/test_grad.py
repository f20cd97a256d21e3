"""Exercise 3.7 (autograd.grad): returned, not accumulated; create_graph for higher derivatives."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minikernel as mk
from minikernel import Tensor
from minikernel import autograd as A
from tests.helpers import leaves_pair
from tests.torch_versions import quoted_since


def _grad(lib):
    return torch.autograd.grad if lib == "torch" else A.grad


@pytest.mark.exercise("3.7")
@given(st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3))
def test_second_derivative_of_a_quadratic(a, b, c, x0):
    """d/dx (a x² + b x + c) = 2 a x + b, and d²/dx² = 2 a — as the notes compute with create_graph."""
    results = {}
    for lib, (x,) in zip(("torch", "mk"), leaves_pair(torch.tensor(x0))):
        y = a * x ** 2 + b * x + c
        (dy,) = _grad(lib)(y, x, create_graph=True)
        (d2y,) = _grad(lib)(dy, x)
        results[lib] = (dy.item(), d2y.item(), x.grad)
    assert results["mk"][:2] == pytest.approx(results["torch"][:2], rel=1e-12, abs=1e-12)
    assert results["mk"][2] is None and results["torch"][2] is None  # nothing accumulated


@pytest.mark.exercise("3.7")
def test_gradient_penalty_like_torch():
    """The notes' gradient penalty: ||d out / d x|| enters the loss, trained through create_graph."""
    values = (torch.tensor([[0.5, -1.0], [2.0, 0.3]]), torch.tensor([[1.0, 2.0], [-0.5, 0.7]]))
    results = {}
    for lib, (x, w) in zip(("torch", "mk"), leaves_pair(*values)):
        out = ((x @ w).tanh() ** 2).sum()
        (gx,) = _grad(lib)(out, x, create_graph=True)
        penalty = (gx * gx).sum()
        penalty.backward()
        results[lib] = (penalty.item(), w.grad, x.grad)
    assert results["mk"][0] == pytest.approx(results["torch"][0], rel=1e-12)
    for mine, theirs in zip(results["mk"][1:], results["torch"][1:]):
        torch.testing.assert_close(mine.to_torch(), theirs)


@pytest.mark.exercise("3.7")
def test_several_outputs_and_inputs_with_grad_outputs():
    values = (torch.tensor([1.0, 2.0]), torch.tensor([3.0, -1.0]))
    results = {}
    for lib, (x, y) in zip(("torch", "mk"), leaves_pair(*values)):
        ones = torch.tensor([1.0, 0.5], dtype=torch.float64)
        g = ones if lib == "torch" else Tensor.from_torch(ones.clone())
        outs = (x * y, (x + y).exp())
        results[lib] = _grad(lib)(outs, (x, y), (g, g))
    for mine, theirs in zip(results["mk"], results["torch"]):
        torch.testing.assert_close(mine.to_torch(), theirs)


@pytest.mark.exercise("3.7")
def test_unused_and_non_grad_inputs_raise_like_torch():
    errors = {}
    for lib, (x, z) in zip(("torch", "mk"), leaves_pair(torch.tensor([1.0]), torch.tensor([2.0]))):
        y = (x * 2).sum()
        with pytest.raises(RuntimeError) as unused:
            _grad(lib)(y, (x, z), retain_graph=True)
        gx, gz = _grad(lib)(y, (x, z), allow_unused=True)
        assert gz is None and gx.item() == 2.0
        errors[lib] = str(unused.value)
    # torch before 2.13 says "One of the differentiated Tensors appears to not ..."; the
    # docstring's words (torch's from 2.13 on) name the index of the unused input.
    assert errors["mk"] == quoted_since("2.13", errors["torch"], "The differentiated Tensor at index 1 appears to "
                                        "not have been used in the graph. Set allow_unused=True if this is the "
                                        "desired behavior.")
    x = mk.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        A.grad((x * 2).sum(), mk.tensor([1.0]))
