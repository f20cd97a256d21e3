"""Exercises 3.2 and 3.4-3.6: each backward formula called directly, against torch's autograd."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from minikernel import Tensor
from minikernel.autograd import derivatives as D
from tests.helpers import assert_backward_same_as_torch


def _mk(t: torch.Tensor) -> Tensor:
    return Tensor.from_torch(t.detach().clone())


@st.composite
def broadcast_pairs(draw, max_dims: int = 3):
    """Two shapes that broadcast together (size-1 and missing dims on either side)."""
    full = draw(st.lists(st.integers(1, 3), min_size=0, max_size=max_dims))
    def part():
        keep = draw(st.integers(0, len(full)))
        return tuple(1 if draw(st.booleans()) else n for n in full[len(full) - keep:])
    return part(), part()


def _torch_grads(fn, *values, grad):
    leaves = [v.detach().clone().requires_grad_() for v in values]
    return torch.autograd.grad(fn(*leaves), leaves, grad)


def _check(mine, theirs):
    for m, t in zip(mine, theirs):
        assert m.shape == tuple(t.shape), f"gradient shape {m.shape} != torch's {tuple(t.shape)}"
        torch.testing.assert_close(m.to_torch(), t, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- 3.2
@pytest.mark.exercise("3.2")
@given(broadcast_pairs(), st.integers(0, 2**16))
def test_sum_to_shape_is_sum_to_size(shapes, seed):
    a, b = shapes
    full = torch.broadcast_shapes(a, b)
    grad = torch.randn(full, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    for shape in (a, b):
        got = D.sum_to_shape(_mk(grad), shape)
        assert got.shape == tuple(shape)
        torch.testing.assert_close(got.to_torch(), grad.sum_to_size(shape))


# ---------------------------------------------------------------- 3.4
@pytest.mark.exercise("3.4")
@given(broadcast_pairs(), st.sampled_from(["mul", "div", "pow"]), st.integers(0, 2**16))
def test_elementwise_backward_like_torch(shapes, op, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(shapes[0], generator=g, dtype=torch.float64) + 0.5
    b = torch.rand(shapes[1], generator=g, dtype=torch.float64) + 0.5
    full = torch.broadcast_shapes(a.shape, b.shape)
    grad = torch.randn(full, generator=g, dtype=torch.float64)
    fn = {"mul": torch.mul, "div": torch.div, "pow": torch.pow}[op]
    expected = _torch_grads(fn, a, b, grad=grad)
    if op == "pow":
        got = D.pow_backward(_mk(grad), _mk(a), _mk(b), _mk(a ** b))
    else:
        got = getattr(D, f"{op}_backward")(_mk(grad), _mk(a), _mk(b))
    _check(got, expected)


@pytest.mark.exercise("3.4")
@pytest.mark.parametrize("exponent", [2, 3.5, 0, -1])
def test_pow_with_a_number_exponent_like_torch(exponent):
    x = torch.tensor([[0.5, 2.0], [1.5, 3.0]], dtype=torch.float64)
    grad = torch.tensor([[1.0, -2.0], [0.5, 1.0]], dtype=torch.float64)
    (expected,) = _torch_grads(lambda t: t ** exponent, x, grad=grad)
    got, none = D.pow_backward(_mk(grad), _mk(x), exponent, _mk(x ** exponent))
    assert none is None
    _check([got], [expected])


@pytest.mark.exercise("3.4")
def test_pow_at_zero_base_follows_torchs_limit():
    base = torch.tensor([0.0, 0.0, 2.0], dtype=torch.float64)
    exponent = torch.tensor([2.0, 0.0, 1.5], dtype=torch.float64)
    grad = torch.ones(3, dtype=torch.float64)
    expected = _torch_grads(torch.pow, base, exponent, grad=grad)
    got = D.pow_backward(_mk(grad), _mk(base), _mk(exponent), _mk(base ** exponent))
    _check(got, expected)


# ---------------------------------------------------------------- 3.5
@st.composite
def matmul_shapes(draw):
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    left = draw(st.sampled_from([(k,), (n, k), (*batch, n, k)]))
    right_batch = tuple(1 if draw(st.booleans()) else s for s in batch)
    right = draw(st.sampled_from([(k,), (k, m), (*right_batch, k, m)]))
    return left, right


@pytest.mark.exercise("3.5")
@given(matmul_shapes(), st.integers(0, 2**16))
def test_matmul_backward_like_torch(shapes, seed):
    g = torch.Generator().manual_seed(seed)
    a, b = (torch.randn(s, generator=g, dtype=torch.float64) for s in shapes)
    grad = torch.randn(torch.matmul(a, b).shape, generator=g, dtype=torch.float64)
    expected = _torch_grads(torch.matmul, a, b, grad=grad)
    _check(D.matmul_backward(_mk(grad), _mk(a), _mk(b)), expected)


# ---------------------------------------------------------------- 3.6
@pytest.mark.exercise("3.6")
@given(st.lists(st.integers(-2, 2), min_size=1, max_size=6))
def test_max_backward_splits_ties_like_torch(values):
    x = torch.tensor(values, dtype=torch.float64)
    grad = torch.tensor(3.0, dtype=torch.float64)
    (expected,) = _torch_grads(torch.max, x, grad=grad)
    _check([D.max_backward(_mk(grad), _mk(x), _mk(x.max()))], [expected])


@pytest.mark.exercise("3.6")
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.data())
def test_max_dim_backward_like_torch(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    x = torch.randint(-2, 3, shape, generator=torch.Generator().manual_seed(data.draw(st.integers(0, 99)))).double()
    values, indices = x.max(dim, keepdim)
    grad = torch.randn(values.shape, dtype=torch.float64)
    (expected,) = _torch_grads(lambda t: t.max(dim, keepdim).values, x, grad=grad)
    got = D.max_dim_backward(_mk(grad), _mk(indices), tuple(shape), dim % len(shape), keepdim)
    _check([got], [expected])


# ------------------------------------------- through the engine, twice (create_graph)
@pytest.mark.exercise("3.5")  # the latest formula it needs; 3.5 is reached first (see below)
@pytest.mark.parametrize("fn", [
    lambda a, b: (a * b / (b + 2)) ** 3,
    lambda a, b: (a @ b.t()).pow(2).sum(0),
    lambda a, b: a ** b,
])
def test_formulas_through_the_engine(fn):
    # Exercise 3.5's own code first: while it is a stub this test stops there (TODO), and the
    # test belongs to 3.5 only, so 3.3 and 3.4 grade without it.
    eye = Tensor.from_torch(torch.eye(2, dtype=torch.float64))
    grad_a, _ = D.matmul_backward(eye, eye, eye)
    assert torch.equal(grad_a.to_torch(), torch.eye(2, dtype=torch.float64))
    a = torch.rand(2, 3, dtype=torch.float64) + 0.5
    b = torch.rand(2, 3, dtype=torch.float64) + 0.5
    assert_backward_same_as_torch(fn, a, b, grad=torch.ones_like(fn(a, b)) * 0.5)
