"""In-place operations, views and saved tensors, against torch (``CopySlices``, version counters).

Cases from PyTorch's test_autograd / test_view_ops: an in-place op through a view
must rewrite the base's history; what a backward formula saves decides which
in-place ops are refused; refusals carry torch's type and message.

The programs that run backward use ops whose backward is no exercise (clone, add,
exp, tanh, views), so they need the engine (3.3) and nothing later; what ``*``
and ``/`` save is checked on the saved tensors themselves, without a backward.
"""
from __future__ import annotations

import pytest
import torch

import minikernel as mk
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
@pytest.mark.exercise("3.3")
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
        v.exp_()
        return a.tanh().sum(), a, v

    assert_autograd_same_as_torch(program, torch.arange(6.0).view(2, 3) + 1)


@pytest.mark.exercise("3.3")
def test_other_views_of_the_base_see_the_new_history():
    def program(x, lib):
        a = x.clone()
        b, c = a[1:], a[:2]
        b.tanh_()
        return c.exp().sum(), b, c

    assert_autograd_same_as_torch(program, ones(3))


@pytest.mark.exercise("3.3")
def test_inplace_on_a_view_with_an_operand_that_requires_grad():
    def program(x, w, lib):
        a = x.clone()
        a[1].add_(w.exp())
        return a.tanh().sum(), a

    assert_autograd_same_as_torch(lambda x, w, lib: program(x, w, lib), ones(2, 3), torch.tensor([1.0, 2.0, 3.0]))


@pytest.mark.exercise("3.3")
def test_a_base_that_did_not_require_grad_gets_history_from_the_view():
    def program(w, lib):
        a = lib.zeros(2, 3, dtype=lib.float64)
        a.select(0, 0).add_(w)  # select: the same view as a[0], without chapter 01's header code
        a.select(0, 1).sub_(w.tanh())
        return a.exp().sum(), a

    assert_autograd_same_as_torch(program, torch.tensor([1.0, 2.0, 3.0]))


# ------------------------------------------------------- what backward saves
def saved(node, lib):
    """What ``*`` / ``/`` saved: (self, other), None where not saved; unpacking checks versions."""
    if lib is torch:
        return node._saved_self, node._saved_other
    return node.saved_tensors


def _which(values):
    return tuple(v is not None for v in values)


@pytest.mark.parametrize("case", ["mul_scalar", "mul_by_leaf", "mul_in_place_by_leaf", "iadd_product",
                                  "div_scalar", "div_by_leaf", "mul_no_grad_partner"])
def test_mul_and_div_save_what_their_gradients_need(case):
    """``a * b`` saves b only if a needs a gradient, a only if b does; ``a / b`` saves b
    if either does, a only if b does (derivatives.yaml). So writing into an operand that
    isn't saved no longer breaks backward."""
    def program(x, lib):
        w = lib.tensor([2.0, 3.0, 4.0], dtype=lib.float64)
        h = x.clone()
        node = {
            "mul_scalar": lambda: h.mul_(2).grad_fn,
            "mul_by_leaf": lambda: (h * x).grad_fn,
            "mul_in_place_by_leaf": lambda: h.mul_(x).grad_fn,
            "iadd_product": lambda: (h * 2).grad_fn,
            "div_scalar": lambda: (h / 4).grad_fn,
            "div_by_leaf": lambda: (w / x).grad_fn,
            "mul_no_grad_partner": lambda: (w * h).grad_fn,
        }[case]()
        return _which(saved(node, lib))

    theirs = program(torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True), torch)
    mine = program(mk.tensor([1.0, -2.0, 3.0], dtype="float64", requires_grad=True), mk)
    assert mine == theirs


@pytest.mark.parametrize("case", ["saved_operand", "saved_result_exp", "saved_result_inplace", "saved_leaf_partner",
                                  "add_then_exp"])
def test_true_modified_by_an_inplace_operation_errors_carry_both_versions(case):
    """Unpacking a tensor written to since it was saved raises torch's error (both versions,
    and the node it came out of)."""
    def saved_operand(x, lib):
        a = x.clone()
        y = a * a
        a.add_(2)
        return y

    def saved_result_exp(x, lib):
        y = x.exp()
        y.add_(1)
        return y.grad_fn.next_functions[0][0], y  # ExpBackward0, which saved y

    def saved_result_inplace(x, lib):
        h = x.exp()
        h.exp_()  # saves h itself, at its new version
        h.add_(2)
        return h.grad_fn.next_functions[0][0], h

    def saved_leaf_partner(x, lib):
        w = lib.ones(3, dtype=lib.float64, requires_grad=True)  # a leaf: no "output of" in the message
        z = x * w
        with lib.no_grad():
            w.add_(1)
        return z

    def add_then_exp(x, lib):
        h = x.exp()  # saves its result, h
        h.add_(1)
        h.exp_()
        return h.grad_fn.next_functions[0][0].next_functions[0][0], h

    program = {"saved_operand": saved_operand, "saved_result_exp": saved_result_exp,
               "saved_result_inplace": saved_result_inplace, "saved_leaf_partner": saved_leaf_partner,
               "add_then_exp": add_then_exp}[case]

    def unpack(x, lib):
        out = program(x, lib)
        node = out[0] if isinstance(out, tuple) else out.grad_fn
        if lib is torch:
            return [getattr(node, a) for a in dir(node) if a.startswith("_saved_") and a != "_saved_tensors"]
        return node.saved_tensors

    assert_autograd_same_as_torch(unpack, torch.tensor([1.0, 2.0, 3.0]), backward=False,
                                  message_until=VERSION_MESSAGE_UNTIL)


@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("case", ["relu_in_place", "tanh_in_place", "sigmoid_of_view"])
def test_in_place_ops_that_save_their_result_backpropagate(case):
    programs = {
        "relu_in_place": lambda x, lib: (lambda h: (h.relu_(), h)[1].exp().sum())(x.clone()),
        "tanh_in_place": lambda x, lib: (lambda h: (h.tanh_(), h)[1].exp().sum())(x.clone()),
        "sigmoid_of_view": lambda x, lib: (lambda h: (h[1:].sigmoid_(), h)[1].exp().sum())(x.clone()),
    }
    assert_autograd_same_as_torch(programs[case], torch.tensor([1.0, -2.0, 3.0]))


def test_version_counters_are_shared_by_base_and_views():
    def program(x, lib):
        a = x.clone()
        v, w = a[0], a.t()
        v.add_(1)
        w.mul_(2)
        return a, v, w

    assert_autograd_same_as_torch(program, ones(2, 2), backward=False)
