"""Chapter 03 edge cases of gradcheck (3.9): which inputs count, their sizes, and the tolerance's reference.

* Inputs that do not require grad get no Jacobian and are not differentiated
  (``autograd.grad`` refuses them); an input the function does not use gets a
  Jacobian of zeros (``allow_unused=True``), as in torch.
* An input of one element has one row, an empty one none: shape ``(0, output.numel())``.
* ``np.allclose(analytical, numerical, rtol, atol)`` is not symmetric: the relative
  tolerance is taken of its second argument, the numerical Jacobian, as torch's
  gradcheck does. With ``rtol=0.5`` a backward 0.6 times too small passes and one
  1.8 times too large fails; swapped, it is the other way round.
* ``atol`` and ``rtol`` each in its place (their defaults differ 100-fold, so
  swapping them changes the verdict on a Jacobian of large or of small values).
* ``fn`` is evaluated with grad mode as the caller has it: a function that runs
  autograd inside itself works.
"""
from __future__ import annotations

import pytest
import torch

from minikernel import autograd as A
from minikernel.autograd import finite_differences as G
from tests.helpers import leaves_pair


def _torch_jacobians(fn, leaves):
    """Each leaf's Jacobian laid out like numerical_jacobian's: (leaf.numel(), out.numel())."""
    out_numel = fn(*leaves).numel()
    full = torch.autograd.functional.jacobian(fn, tuple(leaves))
    return [j.reshape(out_numel, leaf.numel()).t() for j, leaf in zip(full, leaves)]


def _check_jacobians(got, expected):
    assert len(got) == len(expected), (
        f"{len(got)} Jacobians for {len(expected)} inputs that require grad (one per such input, in order)")
    for g, e in zip(got, expected):
        assert g.shape == tuple(e.shape), f"a Jacobian of shape {g.shape}, torch's is {tuple(e.shape)}"
        torch.testing.assert_close(torch.from_numpy(g), e, rtol=1e-6, atol=1e-8)


@pytest.mark.exercise("3.9")
def test_numerical_jacobian_skips_inputs_that_do_not_require_grad():
    a, c, b = torch.tensor([[0.3, -1.2], [2.0, 0.5]]), torch.tensor([0.25, -0.75]), torch.tensor([1.0, -2.0])
    theirs, mine = leaves_pair(a, c, b)
    theirs[1].requires_grad_(False)
    mine[1].requires_grad_(False)
    jacobians = G.numerical_jacobian(lambda a, c, b: (a @ b + c).tanh(), mine)
    expected = _torch_jacobians(lambda a, b: (a @ b + theirs[1]).tanh(), [theirs[0], theirs[2]])
    _check_jacobians(jacobians, expected)


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("shapes", [[(), (1,)], [(1,), (1, 1)], [(0,), (2,)], [(2,), (0, 3)]], ids=str)
def test_numerical_jacobian_of_one_element_and_empty_inputs(shapes):
    values = [torch.linspace(0.5, 1.5, max(1, torch.Size(s).numel())).double()[: torch.Size(s).numel()].reshape(s)
              for s in shapes]
    theirs, mine = leaves_pair(*values)
    fn = lambda p, q: (p.sum() + 2 * q.sum()).tanh() * (q.sum() + 1)  # noqa: E731 - one element out
    jacobians = G.numerical_jacobian(fn, mine)
    _check_jacobians(jacobians, _torch_jacobians(fn, theirs))


class _Scaled:
    """x * 1 with a backward scaled by ``factor`` (1 = correct), in torch and in minikernel."""

    @staticmethod
    def make(lib, factor):
        base = torch.autograd.Function if lib == "torch" else A.Function

        class Scaled(base):
            @staticmethod
            def forward(ctx, x):
                return x * 1.0

            @staticmethod
            def backward(ctx, grad):
                return grad * factor
        return Scaled


def _verdicts(fn_of, values, requires, **kwargs):
    theirs, mine = leaves_pair(*values)
    for t, m, r in zip(theirs, mine, requires):
        t.requires_grad_(r)
        m.requires_grad_(r)
    expected = torch.autograd.gradcheck(fn_of("torch"), tuple(theirs), raise_exception=False, **kwargs)
    got = G.gradcheck(fn_of("mk"), mine, raise_exception=False, **kwargs)
    return got, expected


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("factor", [1.0, 1.8])
def test_gradcheck_leaves_out_inputs_that_do_not_require_grad(factor):
    values = (torch.tensor([0.5, 1.5]), torch.tensor([3.0, -1.0]))
    got, expected = _verdicts(lambda lib: lambda x, c: _Scaled.make(lib, factor).apply(x) + c, values, (True, False))
    assert got == expected, (
        f"torch's gradcheck says {expected}, yours {got}: an input that does not require grad is not "
        "differentiated (only those that require grad are passed to grad)")


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("factor", [1.0, 1.8])
def test_gradcheck_of_a_function_that_ignores_an_input(factor):
    values = (torch.tensor([0.5, 1.5]), torch.tensor([3.0]))
    got, expected = _verdicts(lambda lib: lambda x, unused: _Scaled.make(lib, factor).apply(x), values, (True, True))
    assert got == expected, (
        f"torch's gradcheck says {expected}, yours {got}: an input the output does not depend on has a "
        "Jacobian of zeros (grad(..., allow_unused=True) gives None for it)")


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("factor", [0.6, 1.8, 1.4, 0.45])
def test_gradcheck_takes_rtol_of_the_numerical_jacobian(factor):
    values = (torch.tensor([1.0, 2.0]),)
    got, expected = _verdicts(lambda lib: _Scaled.make(lib, factor).apply, values, (True,), atol=0.0, rtol=0.5)
    assert got == expected, (
        f"a backward {factor} times the true gradient, rtol=0.5, atol=0: torch's gradcheck says {expected}, yours "
        f"{got} (np.allclose(analytical, numerical, ...): |a - n| <= atol + rtol * |numerical|)")


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("factor", [1.0, 1.8])
def test_gradcheck_takes_one_tensor_not_in_a_tuple(factor):
    x = torch.tensor([0.5, 1.5, -2.0])
    theirs, mine = leaves_pair(x)
    expected = torch.autograd.gradcheck(_Scaled.make("torch", factor).apply, theirs[0], raise_exception=False)
    got = G.gradcheck(_Scaled.make("mk", factor).apply, mine[0], raise_exception=False)
    assert got == expected, (
        f"gradcheck(fn, x) with one tensor, not a tuple: torch's says {expected}, yours {got} "
        "(a lone tensor is the one input: wrap it in a tuple before calling fn(*inputs))")


class _Gain:
    """x * gain with a backward off by ``factor``, in torch and in minikernel."""

    @staticmethod
    def make(lib, gain, factor):
        base = torch.autograd.Function if lib == "torch" else A.Function

        class Gain(base):
            @staticmethod
            def forward(ctx, x):
                return x * gain

            @staticmethod
            def backward(ctx, grad):
                return grad * (gain * factor)
        return Gain


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("gain, factor", [(100.0, 1 + 5e-4), (0.01, 1.05), (100.0, 1.01), (0.01, 1 + 5e-4)])
def test_gradcheck_default_tolerances_atol_and_rtol_in_their_places(gain, factor):
    # A Jacobian of 100s off by 0.05 is within rtol=1e-3 of it; one of 0.01s off by 5e-4
    # is beyond atol=1e-5 + rtol * 0.01. Swapping atol and rtol flips both verdicts.
    values = (torch.tensor([1.0, -2.0]),)
    got, expected = _verdicts(lambda lib: _Gain.make(lib, gain, factor).apply, values, (True,))
    assert got == expected, (
        f"a Jacobian of {gain}s from a backward {factor} times too large, default atol=1e-5 and rtol=1e-3: "
        f"torch's gradcheck says {expected}, yours {got} (np.allclose(analytical, numerical, rtol=rtol, atol=atol))")


@pytest.mark.exercise("3.9")
def test_numerical_jacobian_of_a_function_that_runs_autograd_inside():
    # fn is evaluated in the caller's grad mode, as torch's gradcheck evaluates it: a
    # function that differentiates inside itself (here d/dx sum(x * x) = 2x) needs a graph.
    def fn_of(lib):
        if lib == "torch":
            return lambda x: torch.autograd.grad((x * x).sum(), x, create_graph=True)[0]
        return lambda x: A.grad((x * x).sum(), x, create_graph=True)[0]

    theirs, mine = leaves_pair(torch.tensor([0.5, -1.5, 2.0]))
    _check_jacobians(G.numerical_jacobian(fn_of("mk"), mine), _torch_jacobians(fn_of("torch"), theirs))
