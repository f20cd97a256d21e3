"""Exercises 3.8 (MyReLU, a custom Function) and 3.9 (gradcheck), against torch."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minikernel as mk
from minikernel import Tensor
from minikernel import autograd as A
from minikernel.autograd import finite_differences as G
from minikernel.autograd import functions as F
from minikernel.autograd.custom_functions import MyReLU, my_relu_backward, my_relu_forward
from tests.helpers import leaves_pair


# ---------------------------------------------------------------- 3.8
@pytest.mark.exercise("3.8")
@given(st.lists(st.floats(-3, 3) | st.sampled_from([0.0, -0.0, float("nan")]), min_size=1, max_size=6))
def test_my_relu_forward_and_backward_like_torch_relu(values):
    theirs, mine = leaves_pair(torch.tensor(values))
    ctx = MyReLU._backward_cls()
    out = my_relu_forward(ctx, mine[0].detach())
    expected = torch.relu(theirs[0])
    torch.testing.assert_close(out.to_torch(), expected.detach(), equal_nan=True)  # relu(nan) is nan
    grad = torch.linspace(-1, 1, len(values), dtype=torch.float64)
    expected.backward(grad)
    got = my_relu_backward(ctx, Tensor.from_torch(grad.clone()))
    torch.testing.assert_close(got.to_torch(), theirs[0].grad, equal_nan=True)


@pytest.mark.exercise("3.8")
def test_my_relu_in_the_notes_example():
    """x @ w + b through MyReLU: the notes print w.grad == [[4.5, 4.5]] and b.grad == [[4.5]]."""
    x = mk.tensor([[1.0, 2.0], [3.0, 4.0], [-1.0, -5.0]])
    w = mk.tensor([[1.5], [1.0]], requires_grad=True)
    b = mk.tensor([[-0.5]], requires_grad=True)
    y = MyReLU.apply(F.add(F.matmul(x, w), b))
    assert y.grad_fn.name() == "MyReLUBackward"
    y.sum().backward()
    tx, tw, tb = (t.to_torch().detach().clone() for t in (x, w, b))
    tw.requires_grad_(), tb.requires_grad_()
    torch.relu(tx @ tw + tb).sum().backward()
    assert w.grad.tolist() == tw.grad.tolist() and b.grad.tolist() == tb.grad.tolist()


# ---------------------------------------------------------------- 3.9
class _ScaledSquare:
    """x² with a backward scaled by ``factor`` (1 = correct), in torch and in minikernel."""

    @staticmethod
    def make(lib, factor):
        base = torch.autograd.Function if lib == "torch" else A.Function

        class Square(base):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 2 * x * factor
        return Square


@pytest.mark.exercise("3.9")
@given(st.sampled_from([1.0, 1.0, 0.5, 1.01, 1.0001, -1.0]), st.integers(0, 2**16))
def test_gradcheck_verdict_agrees_with_torch(factor, seed):
    x = torch.rand(2, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) + 0.1
    theirs, mine = leaves_pair(x)
    square_t, square_m = _ScaledSquare.make("torch", factor), _ScaledSquare.make("mk", factor)
    expected = torch.autograd.gradcheck(lambda t: square_t.apply(t).tanh(), theirs, raise_exception=False)
    got = G.gradcheck(lambda t: square_m.apply(t).tanh(), mine, raise_exception=False)
    assert got == expected


@pytest.mark.exercise("3.9")
def test_gradcheck_raises_naming_the_input():
    (x,) = leaves_pair(torch.tensor([0.5, 1.5]))[1]
    broken = _ScaledSquare.make("mk", 2.0)
    with pytest.raises(G.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        G.gradcheck(lambda t: broken.apply(t), [x])
    assert isinstance(G.GradcheckError("x"), RuntimeError)


@pytest.mark.exercise("3.9")
def test_numerical_jacobian_like_torchs_jacobian():
    values = (torch.tensor([[0.3, -1.2], [2.0, 0.5]]), torch.tensor([1.0, -2.0]))
    theirs, mine = leaves_pair(*values)
    jacobians = G.numerical_jacobian(lambda a, b: (a @ b).tanh(), mine)
    expected = torch.autograd.functional.jacobian(lambda a, b: (a @ b).tanh(), tuple(theirs))
    for got, exp, leaf in zip(jacobians, expected, theirs):
        assert got.shape == (leaf.numel(), 2)
        torch.testing.assert_close(torch.from_numpy(got), exp.reshape(2, -1).t(), rtol=1e-6, atol=1e-8)
