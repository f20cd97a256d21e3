"""Chapter 03 edge cases: pow's derivative at a zero base, gradcheck of a later input."""
from __future__ import annotations

import pytest
import torch

from minikernel import Tensor, autograd as A
from minikernel.autograd import derivatives as D, finite_differences as G
from tests.helpers import leaves_pair


def _mk(t: torch.Tensor) -> Tensor:
    return Tensor.from_torch(t.detach().clone())


@pytest.mark.exercise("3.4")
@pytest.mark.parametrize("exponent", [0, 0.0, 1, 2, 0.5])
def test_pow_with_a_number_exponent_at_a_zero_base(exponent):
    """d/dx x**0 is 0 everywhere, the base 0 included (not 0 * 0**-1 = nan)."""
    x = torch.tensor([[0.0, 2.0], [1.5, 0.0]], dtype=torch.float64)
    grad = torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64)
    leaf = x.clone().requires_grad_()
    (expected,) = torch.autograd.grad(leaf ** exponent, leaf, grad)
    got, none = D.pow_backward(_mk(grad), _mk(x), exponent, _mk(x ** exponent))
    assert none is None
    torch.testing.assert_close(got.to_torch(), expected, equal_nan=True, rtol=1e-12, atol=1e-12)


@pytest.mark.exercise("3.4")
@pytest.mark.parametrize("exponent", [-1.0, -0.5, 0.0, 0.5, 2.0])
def test_pow_with_a_tensor_exponent_at_a_zero_base(exponent):
    """d/dy x**y = x**y * log(x) is 0 at x = 0 only where y >= 0 (0**y is 0 or 1 there);
    for y < 0 it is inf * -inf = -inf, as torch says (not 0)."""
    x = torch.tensor([[0.0, 2.0], [1.5, 0.0]], dtype=torch.float64)
    y = torch.full_like(x, exponent)
    grad = torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64)
    base, power = x.clone().requires_grad_(), y.clone().requires_grad_()
    expected = torch.autograd.grad(base ** power, (base, power), grad)
    got = D.pow_backward(_mk(grad), _mk(x), _mk(y), _mk(x ** y))
    for mine, theirs, name in zip(got, expected, ("base", "exponent")):
        torch.testing.assert_close(mine.to_torch(), theirs, equal_nan=True, rtol=1e-12, atol=1e-12,
                                   msg=lambda m, name=name: f"gradient of the {name}: {m}")


def _product(lib: str, factor: float):
    """a * b with b's gradient scaled by ``factor`` (1 = correct), in torch or minikernel."""
    base = torch.autograd.Function if lib == "torch" else A.Function

    class Product(base):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a * factor
    return Product


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("factor", [1.0, 2.0, 0.5])
def test_gradcheck_checks_every_input_not_only_the_first(factor):
    values = (torch.tensor([0.5, 1.5, -1.0]), torch.tensor([2.0, -0.5, 1.0]))
    theirs, mine = leaves_pair(*values)
    expected = torch.autograd.gradcheck(_product("torch", factor).apply, tuple(theirs), raise_exception=False)
    got = G.gradcheck(_product("mk", factor).apply, mine, raise_exception=False)
    assert got == expected, f"torch's gradcheck says {expected}, yours {got} (the wrong gradient is the 2nd input's)"
    if not expected:
        with pytest.raises(G.GradcheckError, match="with respect to input 1"):
            G.gradcheck(_product("mk", factor).apply, mine)
