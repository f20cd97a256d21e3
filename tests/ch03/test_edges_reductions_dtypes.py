"""Chapter 03 edge cases: ``amax`` and ``prod`` under autograd, and gradients of mixed-dtype operations.

* ``amax`` over any dims shares each gradient evenly between the elements that tie for
  the maximum (torch's ``AmaxBackward0``); the values below tie on purpose.
* ``prod``'s backward is differentiable again (second derivatives), zeros or not.
* An operation on float32 and float64 computes in float64, but each input's gradient
  has the input's own dtype: torch's engine converts a gradient to the dtype of the
  tensor it flows to (``validate_outputs``).
"""
from __future__ import annotations

import pytest
import torch

import minikernel
from minikernel import Tensor
from tests.helpers import assert_autograd_same_as_torch

# Row 0 ties at 3.0 twice, column 1 ties at 3.0 twice, and 3.0 appears three times in all.
TIES = torch.tensor([[3.0, 3.0, -1.0, 0.5], [2.0, 3.0, 2.0, -4.0], [0.0, -2.0, 2.0, 1.0]], dtype=torch.float64)


@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("dim", [(), 0, 1, -1, (0, 1), [1]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_values_and_tied_gradients_like_torch(dim, keepdim):
    def program(x, lib):
        top = x.amax(dim, keepdim)
        return top.exp().sum(), top  # a gradient that differs per maximum (exp's backward is no exercise)
    assert_autograd_same_as_torch(program, TIES)


@pytest.mark.exercise("3.3")
def test_amax_of_a_3d_tensor_over_the_middle_dim_like_torch():
    x = torch.tensor([[[1.0, 5.0], [5.0, 2.0], [5.0, 5.0]], [[0.0, -1.0], [0.0, -1.0], [0.0, 7.0]]],
                     dtype=torch.float64)
    assert_autograd_same_as_torch(lambda t, lib: t.amax(1).exp().sum(), x)


@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_amax_of_an_empty_tensor_raises_torchs_error(shape):
    with pytest.raises(RuntimeError) as theirs:
        torch.zeros(shape).amax()
    with pytest.raises(RuntimeError) as mine:
        Tensor.from_torch(torch.zeros(shape)).amax()
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize("op", [pytest.param("add", marks=pytest.mark.exercise("3.3")),
                                pytest.param("mul", marks=pytest.mark.exercise("3.4")),  # mul_backward
                                pytest.param("truediv", marks=pytest.mark.exercise("3.4")),  # div_backward
                                pytest.param("sub", marks=pytest.mark.exercise("3.3"))])
def test_a_float32_input_gets_a_float32_gradient_from_a_float64_result(op):
    a32 = torch.tensor([[0.5, -1.5], [2.0, 0.25]], dtype=torch.float32)
    b64 = torch.tensor([[1.25, 2.0], [-0.5, 3.0]], dtype=torch.float64)
    grads = []
    for lib, wrap in ((torch, lambda t: t.clone()), (minikernel, Tensor.from_torch)):
        a, b = wrap(a32).requires_grad_(), wrap(b64).requires_grad_()
        out = getattr(a, f"__{op}__")(b)
        gradient = torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64)  # differs per element
        out.backward(gradient if lib is torch else Tensor.from_torch(gradient))
        grads.append([a.grad if lib is torch else a.grad.to_torch(), b.grad if lib is torch else b.grad.to_torch()])
    (ta, tb), (ma, mb) = grads
    assert (ma.dtype, mb.dtype) == (ta.dtype, tb.dtype) == (torch.float32, torch.float64)
    torch.testing.assert_close(ma, ta)
    torch.testing.assert_close(mb, tb)


@pytest.mark.exercise("3.7")  # autograd.grad
def test_the_dtype_conversion_of_a_gradient_is_recorded_under_create_graph():
    # d/da of (a32 * b64)^2 summed, then its own gradient: the float32 cast sits in the graph.
    results = []
    for lib, wrap in ((torch, lambda t: t.clone()), (minikernel, Tensor.from_torch)):
        a = wrap(torch.tensor([0.5, -1.5, 2.0], dtype=torch.float32)).requires_grad_()
        b = wrap(torch.tensor([1.25, 2.0, -0.5], dtype=torch.float64)).requires_grad_()
        (ga,) = lib.autograd.grad(((a * b) * (a * b)).sum(), [a], create_graph=True)
        assert str(ga.dtype).removeprefix("torch.") == "float32"
        ga.sum().backward()
        results.append(b.grad if lib is torch else b.grad.to_torch())
    torch.testing.assert_close(results[1], results[0])


PROD_CASES = {"no_zero": [[1.5, 2.0, -3.0], [0.5, 4.0, 2.0]],
              "one_zero": [[1.5, 0.0, -3.0], [0.5, 4.0, 2.0]],
              "two_zeros": [[0.0, 0.0, -3.0], [0.5, 0.0, 2.0]],
              "three_zeros": [[0.0, 0.0, 0.0], [0.5, 0.0, 2.0]]}


@pytest.mark.exercise("3.7")  # autograd.grad
@pytest.mark.parametrize("values", list(PROD_CASES))
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_prod_second_derivatives_like_torch_with_and_without_zeros(values, dim):
    # The first derivative of prod is a product of the others; its own derivative at two
    # zeros is the product of the rest, not 0: a backward computed outside autograd loses it.
    results = []
    for lib, wrap in ((torch, lambda t: t.clone()), (minikernel, Tensor.from_torch)):
        x = wrap(torch.tensor(PROD_CASES[values], dtype=torch.float64)).requires_grad_()
        out = x.prod() if dim is None else x.prod(dim)
        (first,) = lib.autograd.grad((out * out).sum() if dim is not None else out, [x], create_graph=True)
        (second,) = lib.autograd.grad((first * first).sum(), [x])
        results.append([t if lib is torch else t.to_torch() for t in (first.detach(), second)])
    (t1, t2), (m1, m2) = results
    torch.testing.assert_close(m1, t1, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(m2, t2, rtol=1e-12, atol=1e-12)
