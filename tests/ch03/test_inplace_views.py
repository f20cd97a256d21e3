"""In-place operations, views and saved tensors, against torch (``CopySlices``, version counters).

Cases from PyTorch's test_autograd / test_view_ops: an in-place op through a view
must rewrite the base's history; what a backward formula saves decides which
in-place ops are refused; refusals carry torch's type and message.
"""
from __future__ import annotations

import pytest
import torch

from tests.helpers import assert_autograd_same_as_torch

VERSION_MESSAGE_UNTIL = "instead."  # torch's message, up to its hint (the hint is minikernel's own)


def ones(*shape):
    return torch.ones(*shape)


# ----------------------------------------------------------- refusals at forward
def test_inplace_on_a_leaf_that_requires_grad_is_refused():
    assert_autograd_same_as_torch(lambda x, lib: x[0].mul_(2), ones(2, 2))
    assert_autograd_same_as_torch(lambda x, lib: x.mul_(2), ones(2, 2))


def test_inplace_on_a_view_of_a_leaf_that_requires_grad_is_refused():
    assert_autograd_same_as_torch(lambda x, lib: x.t().add_(1), ones(2, 3))
    assert_autograd_same_as_torch(lambda x, lib: x.view(6).exp_(), ones(2, 3))


# ------------------------------------------------------------------ CopySlices
@pytest.mark.exercise("3.2")
@pytest.mark.exercise("3.3")
@pytest.mark.exercise("3.4")
@pytest.mark.parametrize("view", ["row", "column", "transpose", "view", "slice_step", "view_of_view"])
def test_inplace_through_a_view_rewrites_the_base_history(view):
    make = {
        "row": lambda a: a[0],
        "column": lambda a: a[:, 1],
        "transpose": lambda a: a.t(),
        "view": lambda a: a.view(6),
        "slice_step": lambda a: a[:, ::2],
        "view_of_view": lambda a: a[1:].t()[0],
    }[view]

    def program(root, lib):
        a = root.clone()
        v = make(a)
        v.mul_(2)
        return (a * a).sum(), a, v

    assert_autograd_same_as_torch(program, torch.arange(6.0).view(2, 3) + 1)


@pytest.mark.exercise("3.2")
@pytest.mark.exercise("3.3")
@pytest.mark.exercise("3.4")
def test_other_views_of_the_base_see_the_new_history():
    def program(x, lib):
        a = x * 1
        b, c = a[1:], a[:2]
        b.mul_(3)
        return c.sum(), b, c

    assert_autograd_same_as_torch(program, ones(3))


@pytest.mark.exercise("3.2")
@pytest.mark.exercise("3.3")
@pytest.mark.exercise("3.4")
def test_inplace_on_a_view_with_an_operand_that_requires_grad():
    def program(x, w, lib):
        a = x.clone()
        a[1].mul_(w)
        return (a * 2).sum(), a

    assert_autograd_same_as_torch(lambda x, w, lib: program(x, w, lib), ones(2, 3), torch.tensor([1.0, 2.0, 3.0]))


@pytest.mark.exercise("3.2")
@pytest.mark.exercise("3.3")
@pytest.mark.exercise("3.4")
@pytest.mark.exercise("1.2")  # a[0] of a tensor outside autograd: the kernel path's header (chapter 01)
def test_a_base_that_did_not_require_grad_gets_history_from_the_view():
    def program(w, lib):
        a = lib.zeros(2, 3, dtype=lib.float64)
        a[0].add_(w)
        a[1].mul_(w)  # zeros times w: gradient 0 for this row
        return (a * a).sum(), a

    assert_autograd_same_as_torch(program, torch.tensor([1.0, 2.0, 3.0]))


# ------------------------------------------------------- what backward saves
@pytest.mark.exercise("3.2")
@pytest.mark.exercise("3.3")
@pytest.mark.exercise("3.4")
@pytest.mark.parametrize("case", ["mul_scalar", "mul_self_times", "iadd_product", "div_scalar"])
def test_no_false_modified_by_an_inplace_operation_error(case):
    programs = {
        "mul_scalar": lambda x, lib: (lambda h: (h.mul_(2), h)[1].sum())(x * 3),
        "mul_self_times": lambda x, lib: (lambda h: (h.mul_(x), h)[1].sum())(x * 3),
        "iadd_product": lambda x, lib: (lambda h: (h.__iadd__(h * 2)).sum())(x * 1),
        "div_scalar": lambda x, lib: (lambda h: (h.div_(4), h)[1].sum())(x * 3),
    }
    assert_autograd_same_as_torch(programs[case], torch.tensor([1.0, -2.0, 3.0]))


@pytest.mark.exercise("3.2")
@pytest.mark.exercise("3.3")
@pytest.mark.exercise("3.4")
@pytest.mark.parametrize("case", ["saved_operand", "saved_result_exp", "saved_result_inplace", "saved_leaf_partner",
                                  "add_then_mul"])
def test_true_modified_by_an_inplace_operation_errors_carry_both_versions(case):
    def saved_operand(x, lib):
        a = x * 1
        y = a * a
        a.mul_(2)
        return y.sum()

    def saved_result_exp(x, lib):
        y = x.exp()
        z = y * 1
        y.add_(1)
        return z.sum() + y.sum()

    def saved_result_inplace(x, lib):
        h = x.exp()
        h.exp_()  # saves h itself, at its new version
        h.mul_(2)
        return h.sum()

    def saved_leaf_partner(x, lib):
        w = lib.ones(3, dtype=lib.float64, requires_grad=True)  # a leaf: no "output of" in the message
        z = x * w
        with lib.no_grad():
            w.add_(1)
        return z.sum()

    def add_then_mul(x, lib):
        h = x.exp()  # saves its result, h
        h.add_(1)
        h.mul_(2)
        return h.sum()

    program = {"saved_operand": saved_operand, "saved_result_exp": saved_result_exp,
               "saved_result_inplace": saved_result_inplace, "saved_leaf_partner": saved_leaf_partner,
               "add_then_mul": add_then_mul}[case]
    assert_autograd_same_as_torch(program, torch.tensor([1.0, 2.0, 3.0]), message_until=VERSION_MESSAGE_UNTIL)


def test_version_counters_are_shared_by_base_and_views():
    def program(x, lib):
        a = x * 1
        v, w = a[0], a.t()
        v.add_(1)
        w.mul_(2)
        return a, v, w

    assert_autograd_same_as_torch(program, ones(2, 2), backward=False)
