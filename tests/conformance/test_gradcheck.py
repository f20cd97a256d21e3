"""``minikernel.autograd.gradcheck`` against ``torch.autograd.gradcheck``: verdicts, exception types
and messages, warnings, grad mode inside the checked function, several outputs, outputs that
do not require grad, and a backward that ignores its grad_output."""
from __future__ import annotations

import warnings

import pytest
import torch

import minikernel
from minikernel import autograd as A

VALUES = [0.5, -1.25, 2.0]


def _pair(values=VALUES, dtype=torch.float64, requires_grad=True):
    theirs = torch.tensor(values, dtype=dtype, requires_grad=requires_grad)
    mine = minikernel.Tensor.from_torch(theirs.detach().clone()).requires_grad_(requires_grad)
    return theirs, mine


def _outcome(check, fn, inputs, **kwargs):
    """(verdict or None, exception type name or None, message, [(category, message) of warnings])."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            verdict, error, message = check(fn, inputs, **kwargs), None, ""
        except Exception as err:  # noqa: BLE001 - the type and words are compared with torch's
            if "exercise" in str(err) and isinstance(err, NotImplementedError):
                raise  # student mode: the check is exercise 3.9
            verdict, error, message = None, type(err).__name__, str(err).splitlines()[0]
    return verdict, error, message, [(w.category, str(w.message)) for w in caught]


def _same(torch_fn, mk_fn, theirs, mine, **kwargs):
    expected = _outcome(torch.autograd.gradcheck, torch_fn, theirs, **kwargs)
    got = _outcome(A.gradcheck, mk_fn, mine, **kwargs)
    assert got == expected, f"minikernel: {got}\ntorch:      {expected}"
    return got


def _both(make):
    """The same function written once for each library: ``make(lib)`` with lib torch or minikernel."""
    return make(torch), make(minikernel)


def _scaled(lib, factor):
    """x * x with a backward ``factor`` times the true one (1: correct)."""
    base = torch.autograd.Function if lib is torch else A.Function

    class Scaled(base):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x * factor
    return Scaled


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("grad_enabled_value", [2.0, 3.0])
def test_the_function_runs_with_the_callers_grad_mode(grad_enabled_value):
    """A function whose value depends on grad mode: torch perturbs it with grad enabled, so the
    numerical and analytical Jacobians agree; evaluated under no_grad they would differ."""
    def make(lib):
        def f(x):
            return x * grad_enabled_value if lib.is_grad_enabled() else x * 7.0
        return f
    theirs, mine = _pair()
    assert _same(*_both(make), (theirs,), (mine,))[0] is True


@pytest.mark.exercise("3.9")
def test_a_function_that_differentiates_inside_itself():
    """grad(..., create_graph=True) inside the checked function (a gradient penalty's shape)."""
    def make(lib):
        grad = torch.autograd.grad if lib is torch else A.grad

        def f(x):
            (g,) = grad((x ** 3).sum(), [x], create_graph=True)
            return g * x
        return f
    theirs, mine = _pair()
    assert _same(*_both(make), (theirs,), (mine,))[0] is True


@pytest.mark.exercise("3.9")
def test_a_hook_registered_inside_the_function_runs_in_its_backward():
    def make(lib):
        def f(x):
            y = x * x
            y.register_hook(lambda g: g * 3)
            return y
        return f
    theirs, mine = _pair()
    assert _same(*_both(make), (theirs,), (mine,), raise_exception=False)[0] is False


@pytest.mark.exercise("3.9")
def test_under_no_grad_no_output_requires_grad_and_the_numerical_gradient_is_not_zero():
    theirs, mine = _pair()
    with torch.no_grad(), A.no_grad():
        got = _same(lambda x: x * x, lambda x: x * x, (theirs,), (mine,))
    assert got[1] == "GradcheckError" and got[2] == "Numerical gradient for function expected to be zero"
    with torch.no_grad(), A.no_grad():
        assert _same(lambda x: x * x, lambda x: x * x, (theirs,), (mine,), raise_exception=False)[0] is False


@pytest.mark.exercise("3.9")
def test_outputs_that_do_not_require_grad():
    theirs, mine = _pair()
    got = _same(lambda x: x.detach() * 2, lambda x: x.detach() * 2, (theirs,), (mine,))
    assert got[1] == "GradcheckError"
    constant_t, constant_m = torch.ones(2, dtype=torch.float64), minikernel.ones(2, dtype=minikernel.float64)
    assert _same(lambda x: constant_t * 1, lambda x: constant_m * 1, (theirs,), (mine,))[0] is True


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("factor", [1.0, 1.5])
def test_several_outputs_each_checked_and_named(factor):
    def make(lib):
        return lambda x, y: (x.tanh(), _scaled(lib, factor).apply(y), y.detach())
    (tx, mx), (ty, my) = _pair(), _pair([1.5, -0.5])
    got = _same(*_both(make), (tx, ty), (mx, my))
    assert (got[0] is True) == (factor == 1.0)
    if factor != 1.0:
        assert got[2] == "Jacobian mismatch for output 1 with respect to input 1,"
        assert _same(*_both(make), [tx, ty], [mx, my], raise_exception=False)[0] is False


@pytest.mark.exercise("3.9")
def test_a_backward_that_ignores_its_grad_output():
    """One element: the Jacobian alone cannot tell; zero grad_outputs must give zero gradients."""
    def make(lib):
        base = torch.autograd.Function if lib is torch else A.Function

        class IgnoresGrad(base):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 0 + 2
        return IgnoresGrad.apply
    theirs, mine = _pair([0.75])
    got = _same(*_both(make), theirs, mine)
    assert got[1:3] == ("GradcheckError", "backward not multiplied by grad_output")


def test_no_input_requiring_grad_is_a_value_error_whatever_raise_exception():
    theirs, mine = _pair(requires_grad=False)
    for raise_exception in (True, False):
        got = _same(lambda x: x * 2, lambda x: x * 2, (theirs, 3), (mine, 3), raise_exception=raise_exception)
        assert got[1] == "ValueError" and "at least one input tensor to require gradient" in got[2]


def test_an_expanded_input_is_a_runtime_error():
    base_t, base_m = _pair([1.5])
    theirs, mine = base_t.detach().expand(3).requires_grad_(), base_m.detach().expand(3).requires_grad_()
    for raise_exception in (True, False):
        got = _same(lambda x: x * 2, lambda x: x * 2, (theirs,), (mine,), raise_exception=raise_exception)
        assert got[1] == "RuntimeError" and "has a dimension with stride 0" in got[2]


@pytest.mark.exercise("3.9")
def test_an_input_that_is_not_float64_warns():
    (theirs, mine), (t64, m64) = _pair(dtype=torch.float32), _pair()
    got = _same(lambda x, y: x * y, lambda x, y: x * y, (t64, theirs), (m64, mine), raise_exception=False)
    assert got[3] == [(UserWarning, got[3][0][1])] and got[3][0][1].startswith("Input #1 requires gradient and is not")
