"""``minikernel.nn.functional.layer_norm`` and ``minikernel.nn.LayerNorm``: an autograd
Function on the chapter 05 kernels, checked against ``F.layer_norm``/``nn.LayerNorm``
and with ``torch.autograd.gradcheck`` in float64.

Every test calls the forward first, so in student mode it stops at exercise 5.4;
the backward then needs 5.5 (and chapter 03's engine), the Module chapter 04's 4.1.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as TF

import minikernel as mk
from minikernel import Tensor
from minikernel.nn import LayerNorm
from minikernel.nn import functional as NF
from tests.ch05.strategies import randn

CASES = [  # (input shape, normalized_shape, affine: weight, bias)
    ((3, 5), (5,), (True, True)),
    ((2, 3, 4), (3, 4), (True, True)),
    ((2, 3, 4), 4, (True, False)),
    ((4, 1, 6), (1, 6), (False, False)),
    ((2, 2, 2, 3), (2, 2, 3), (False, True)),
]


def leaf(t: torch.Tensor, requires_grad: bool = True) -> Tensor:
    """A minikernel leaf over a copy of ``t``'s values."""
    return Tensor.from_torch(t.detach().clone()).requires_grad_(requires_grad)


def _case(shape, normalized, affine, seed):
    shape_n = (normalized,) if isinstance(normalized, int) else normalized
    x = randn(shape, torch.float64, seed, shift=1.5)
    w = randn(shape_n, torch.float64, seed + 1) if affine[0] else None
    b = randn(shape_n, torch.float64, seed + 2) if affine[1] else None
    return x, w, b


@pytest.mark.exercise("5.5")  # needs 5.4 too: counts for the later of the two
@pytest.mark.parametrize("shape, normalized, affine", CASES)
def test_values_and_gradients_match_torch(shape, normalized, affine):
    x, w, b = _case(shape, normalized, affine, seed=40)
    mx, mw, mb = leaf(x), None if w is None else leaf(w), None if b is None else leaf(b)
    y = NF.layer_norm(mx, normalized, mw, mb, eps=1e-5)
    tx, tw, tb = (None if t is None else t.clone().requires_grad_() for t in (x, w, b))
    ty = TF.layer_norm(tx, (normalized,) if isinstance(normalized, int) else normalized, tw, tb, eps=1e-5)
    torch.testing.assert_close(y.to_torch(), ty.detach(), rtol=1e-12, atol=1e-12)
    assert y.grad_fn.name() == ty.grad_fn.name() == "NativeLayerNormBackward0"
    dy = randn(shape, torch.float64, 41)
    wanted = [(m, t) for m, t in ((mx, tx), (mw, tw), (mb, tb)) if m is not None]
    got = mk.autograd.grad(y, [m for m, _ in wanted], Tensor.from_torch(dy))
    expected = torch.autograd.grad(ty, [t for _, t in wanted], dy)
    for mine, theirs in zip(got, expected):
        torch.testing.assert_close(mine.to_torch(), theirs, rtol=1e-10, atol=1e-10)


class _Bridge(torch.autograd.Function):
    """A torch Function whose forward and backward are minikernel's, so that
    ``torch.autograd.gradcheck`` can compare minikernel's analytical gradients with
    finite differences of minikernel's own forward."""

    @staticmethod
    def forward(ctx, x, w, b, normalized):
        mx, mw, mb = leaf(x), leaf(w), leaf(b)
        y = NF.layer_norm(mx, normalized, mw, mb)
        ctx.keep = (mx, mw, mb, y)
        return y.to_torch().detach().clone()

    @staticmethod
    def backward(ctx, grad):
        mx, mw, mb, y = ctx.keep
        grads = mk.autograd.grad(y, (mx, mw, mb), Tensor.from_torch(grad.contiguous()), retain_graph=True)
        return (*(g.to_torch().clone() for g in grads), None)


@pytest.mark.exercise("5.5")  # needs 5.4 too: counts for the later of the two
@pytest.mark.parametrize("shape, normalized", [((3, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_torch_gradcheck_in_float64(shape, normalized):
    x, w, b = _case(shape, normalized, (True, True), seed=42)
    NF.layer_norm(leaf(x), normalized, leaf(w), leaf(b))  # the forward first: exercise 5.4
    inputs = tuple(t.requires_grad_() for t in (x, w, b))
    assert torch.autograd.gradcheck(lambda *a: _Bridge.apply(*a, normalized), inputs, eps=1e-6, atol=1e-6)


@pytest.mark.exercise("5.5")  # needs 5.4 too: counts for the later of the two
def test_only_the_inputs_that_require_grad_get_one_and_sum_backward_works():
    x, w, b = _case((4, 6), (6,), (True, True), seed=43)
    mx, mw, mb = leaf(x), leaf(w, requires_grad=False), leaf(b)
    y = NF.layer_norm(mx, (6,), mw, mb)
    mk.autograd.functions.sum(mk.autograd.functions.mul(y, y)).backward()  # dy = 2y, reached through sum's expanded gradient
    tx, tb = x.clone().requires_grad_(), b.clone().requires_grad_()
    (TF.layer_norm(tx, (6,), w, tb) ** 2).sum().backward()
    assert mw.grad is None
    torch.testing.assert_close(mx.grad.to_torch(), tx.grad)
    torch.testing.assert_close(mb.grad.to_torch(), tb.grad)


@pytest.mark.exercise("5.4")
def test_no_grad_records_nothing_and_values_are_the_kernels():
    x = randn((2, 5), torch.float64, 44)
    mx = leaf(x)
    with mk.no_grad():
        y = NF.layer_norm(mx, 5)
    assert y.grad_fn is None and not y.requires_grad
    torch.testing.assert_close(y.to_torch(), TF.layer_norm(x, (5,)))


@pytest.mark.exercise("5.5")  # needs 5.4 too: counts for the later of the two
def test_double_backward_is_refused_clearly():
    mx = leaf(randn((2, 5), torch.float64, 45))
    y = NF.layer_norm(mx, 5)
    with pytest.raises(RuntimeError, match="double backward"):
        mk.autograd.grad(y, (mx,), Tensor.from_torch(torch.ones(2, 5, dtype=torch.float64)), create_graph=True)


# ------------------------------------------------------------------ the Module
@pytest.mark.exercise("5.5")  # needs 5.4 too: counts for the later of the two
@pytest.mark.parametrize("kwargs", [{}, {"elementwise_affine": False}, {"bias": False}, {"eps": 1e-3}])
def test_layer_norm_module_matches_torch_nn_layer_norm(kwargs):
    x = randn((3, 2, 4), torch.float32, 46, shift=2.0)
    NF.layer_norm(leaf(x), (2, 4))  # the kernel first: exercise 5.4
    mine, theirs = LayerNorm((2, 4), **kwargs), torch.nn.LayerNorm((2, 4), **kwargs)
    assert repr(mine) == repr(theirs)
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    for (_, p), (_, q) in zip(mine.named_parameters(), theirs.named_parameters()):
        assert p.shape == tuple(q.shape) and torch.equal(p.to_torch(), q.detach())  # ones and zeros
        with torch.no_grad():
            q.copy_(randn(q.shape, torch.float32, 47))
        p.to_torch().copy_(q.detach())  # the same values on both sides
    mx, tx = leaf(x), x.clone().requires_grad_()
    y, ty = mine(mx), theirs(tx)
    torch.testing.assert_close(y.to_torch(), ty.detach(), rtol=1e-5, atol=1e-5)
    dy = randn(x.shape, torch.float32, 48)
    y.backward(Tensor.from_torch(dy))
    ty.backward(dy)
    torch.testing.assert_close(mx.grad.to_torch(), tx.grad, rtol=1e-4, atol=1e-4)
    for (_, p), (_, q) in zip(mine.named_parameters(), theirs.named_parameters()):
        torch.testing.assert_close(p.grad.to_torch(), q.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.exercise("5.4")
def test_layer_norm_module_int_shape_and_float64():
    x = randn((2, 7), torch.float64, 49)
    NF.layer_norm(leaf(x), 7)
    ln = LayerNorm(7, dtype="float64")
    assert ln.normalized_shape == torch.nn.LayerNorm(7).normalized_shape == (7,)
    assert str(ln.weight.dtype) == "float64"
    torch.testing.assert_close(ln(leaf(x)).to_torch(), TF.layer_norm(x, (7,)))


# ------------------------------------------------------------------ plumbing
def test_argument_errors_come_before_any_kernel():
    x = Tensor.from_torch(torch.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        NF.layer_norm(x, 4)
    with pytest.raises(ValueError, match="live on the cpu"):
        LayerNorm(3, device="cuda")
