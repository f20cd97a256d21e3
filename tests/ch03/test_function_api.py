"""``autograd.Function`` beyond save_for_backward: what torch's test_autograd checks of it.

Materialized gradients, ``set_materialize_grads(False)``, non-tensor outputs, extra
trailing ``None`` gradients, ``mark_dirty``, ``mark_non_differentiable``,
``once_differentiable`` and ``gradgradcheck``. Each program builds its Function
from ``lib.autograd.Function`` so the same code runs on torch and on minikernel.
"""
from __future__ import annotations

import pytest
import torch

import minikernel as mk
from tests.helpers import assert_autograd_same_as_torch


def engine(*more: str):
    """Mark a test with the latest exercise its backward needs: the engine (3.3, which needs
    3.1), or ``more`` instead. Its backward goes through no node whose formula is a later
    exercise, so a finished 3.k grades PASS with only 3.1..3.k done."""
    def mark(test):
        for exercise_id in (more or ("3.3",)):
            test = pytest.mark.exercise(exercise_id)(test)
        return test
    return mark


def seen_by_backward(lib, materialize: bool, record: list):
    class TwoOutputs(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x.exp(), x.tanh()

        @staticmethod
        def backward(ctx, ga, gb):
            record.append(None if gb is None else gb.detach().sum().item())
            return ga.exp() if gb is None else ga.exp() + gb

    return TwoOutputs


@pytest.mark.parametrize("materialize", [True, False])
@engine()
def test_an_unused_output_reaches_backward_as_zeros_or_none(materialize):
    seen = {}
    for lib, leaf in ((torch, torch.ones(3, dtype=torch.float64, requires_grad=True)),
                      (mk, mk.ones(3, dtype="float64", requires_grad=True))):
        record = []
        a, _ = seen_by_backward(lib, materialize, record).apply(leaf)
        a.sum().backward()
        seen[lib.__name__] = (record, leaf.grad.detach().tolist() if lib is torch else leaf.grad.to_numpy().tolist())
    assert seen["minikernel"] == seen["torch"]


@engine()
def test_non_tensor_outputs_and_extra_trailing_nones():
    def program(x, lib):
        class WithCount(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp(), 5

            @staticmethod
            def backward(ctx, g, g_count):
                assert g_count is None
                return g, None, None  # two more than forward's inputs: torch drops trailing Nones

        y, count = WithCount.apply(x)
        assert count == 5
        return y

    assert_autograd_same_as_torch(program, torch.tensor([0.5, -1.0]))


@engine()
def test_extra_gradients_that_are_not_none_are_refused():
    def program(x, lib):
        class TooMany(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g, g

        return TooMany.apply(x)

    assert_autograd_same_as_torch(program, torch.tensor([0.5, -1.0]),
                                  message_until="returned an incorrect number of gradients (expected 1, got 2)")


def dirty(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Double


@engine()
def test_mark_dirty_rebases_the_input_history():
    def program(x, lib):
        y = x.clone()
        z = dirty(lib).apply(y)
        assert z is y
        return z.exp(), y

    assert_autograd_same_as_torch(program, torch.tensor([0.5, -1.0]))


def test_mark_dirty_on_a_leaf_that_requires_grad_is_refused():
    assert_autograd_same_as_torch(lambda x, lib: dirty(lib).apply(x), torch.tensor([0.5, -1.0]))


@engine()
def test_mark_non_differentiable():
    def program(x, lib):
        class ValueAndFlag(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                flag = x > 0
                doubled = x * 2
                ctx.mark_non_differentiable(doubled)
                return x.exp(), doubled, flag

            @staticmethod
            def backward(ctx, g, g_doubled, g_flag):
                assert float(g_doubled.sum().item()) == 0.0
                return g * 3

        y, doubled, flag = ValueAndFlag.apply(x)
        assert not doubled.requires_grad and doubled.grad_fn is None
        return y, doubled

    assert_autograd_same_as_torch(program, torch.tensor([0.5, -1.0]))


@engine("3.7")
def test_once_differentiable_refuses_a_second_derivative():
    def program(x, lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 * x

        y = Square.apply(x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        # no graph was recorded through the backward: differentiating g again is refused
        return lib.autograd.grad(g, x, lib.tensor([1.0, 1.0], dtype=lib.float64))

    assert_autograd_same_as_torch(program, torch.tensor([0.5, -1.0]), backward=False)


@engine()
def test_once_differentiable_first_derivative_is_right():
    def program(x, lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 * x

        return Square.apply(x).exp()

    assert_autograd_same_as_torch(program, torch.tensor([0.5, -1.0]))


@engine("3.9")
@pytest.mark.parametrize("fn", ["cube", "exp_times", "tanh_times"])
def test_gradgradcheck_agrees_with_torch(fn):
    # Every op has x as an operand, so every op is recorded (gradcheck evaluates the function in
    # the caller's grad mode): an op on tensors outside autograd would take chapter 02's kernels.
    f = {"cube": lambda x: x * x * x,
         "exp_times": lambda x: x.exp() * x,
         "tanh_times": lambda x: x.tanh() * x}[fn]
    xt = torch.tensor([0.5, 1.5, -2.0], dtype=torch.float64, requires_grad=True)
    xm = mk.Tensor.from_torch(xt.detach().clone()).requires_grad_()
    assert mk.autograd.gradcheck(f, xm)  # your gradcheck first: gradgradcheck is built on it
    assert mk.autograd.gradgradcheck(f, xm) == torch.autograd.gradgradcheck(f, xt)


@engine("3.9")
def test_gradgradcheck_catches_a_wrong_second_derivative():
    def wrong(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 * x.detach() + 0 * x  # drops d/dx of the gradient
        return Square

    xt = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    xm = mk.Tensor.from_torch(xt.detach().clone()).requires_grad_()
    assert mk.autograd.gradcheck(wrong(mk).apply, xm)  # the first derivative is right
    theirs = torch.autograd.gradgradcheck(wrong(torch).apply, xt, raise_exception=False)
    mine = mk.autograd.gradgradcheck(wrong(mk).apply, xm, raise_exception=False)
    assert mine == theirs is False
