"""``gradcheck``'s ``fast_mode``, ``nondet_tol`` and ``check_batched_grad`` against
``torch.autograd.gradcheck``: verdicts, exception types and first lines of messages."""
from __future__ import annotations

import pytest
import torch

from minikernel import autograd as A
from tests.conformance.test_gradcheck import _both, _outcome, _pair, _same, _scaled


def _noisy(lib, noise):
    """x * x whose backward adds ``noise`` times the number of backward calls so far to the derivative: each run differs."""
    base = torch.autograd.Function if lib is torch else A.Function
    calls = [0]

    class Noisy(base):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            calls[0] += 1
            return grad * (2 * x + noise * calls[0])
    return Noisy.apply


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("factor", [1.0, 1.01, 0.5])
def test_fast_mode_gives_torchs_verdict(factor):
    def make(lib):
        return lambda x, y: (x.tanh() * y, _scaled(lib, factor).apply(y))
    (tx, mx), (ty, my) = _pair(), _pair([1.5, -0.5, 0.25])
    got = _same(*_both(make), (tx, ty), (mx, my), fast_mode=True)
    assert (got[0] is True) == (factor == 1.0)
    if factor != 1.0:
        assert got[1:3] == ("GradcheckError", "Jacobian mismatch for output 1 with respect to input 1,")
        assert _same(*_both(make), (tx, ty), (mx, my), fast_mode=True, raise_exception=False)[0] is False


def test_fast_mode_when_no_output_requires_grad():  # (no backward runs: fast mode needs no exercise here)
    theirs, mine = _pair()
    got = _same(lambda x: x.detach() * 2, lambda x: x.detach() * 2, (theirs,), (mine,), fast_mode=True)
    assert got[1:3] == ("GradcheckError", "Numerical gradient for function expected to be zero")


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("nondet_tol", [0.0, 1e-9, 1e-5])
def test_a_backward_that_differs_between_runs_is_refused_beyond_nondet_tol(nondet_tol, fast_mode):
    theirs, mine = _pair()
    got = _same(_noisy(torch, 1e-8), _noisy(A, 1e-8), (theirs,), (mine,), nondet_tol=nondet_tol,
                fast_mode=fast_mode)
    if nondet_tol < 1e-8:
        assert got[1] == "GradcheckError" and got[2].startswith("Backward is not reentrant")
    else:
        assert got[0] is True


@pytest.mark.exercise("3.9")
def test_nondet_tol_does_not_loosen_the_comparison_with_finite_differences():
    def make(lib):
        return _scaled(lib, 1.01).apply
    theirs, mine = _pair()
    got = _same(*_both(make), (theirs,), (mine,), nondet_tol=1.0)
    assert got[1:3] == ("GradcheckError", "Jacobian mismatch for output 0 with respect to input 0,")


def test_check_batched_grad_is_refused_with_the_option_named():
    """torch checks backward against vmap(backward); minikernel has no vmap (docs/conformance.md)."""
    theirs, mine = _pair()
    assert torch.autograd.gradcheck(lambda x: x * x, (theirs,), check_batched_grad=True) is True
    got = _outcome(A.gradcheck, lambda x: x * x, (mine,), check_batched_grad=True)
    assert got[1] == "NotImplementedError" and "check_batched_grad" in got[2]
