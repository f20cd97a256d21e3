"""A view taken under ``no_grad`` of a tensor that requires grad, used in grad mode, against torch:
it requires grad, but its gradient goes nowhere (no edge: neither its ``.grad`` nor its base's
is written); a built-in node of several inputs none of which takes a gradient checks none of its
saved tensors, while a one-input built-in node and a user's ``Function`` still check theirs; a
hook registered on it is accepted and never runs."""
from __future__ import annotations

import pytest
import torch

import minikernel
from minikernel import autograd as A


def _no_grad_view(lib):
    leaf = lib.ones(3, dtype=lib.float64, requires_grad=True)
    with lib.no_grad():
        view = leaf.permute(0)
    return leaf, view


@pytest.mark.exercise("3.3")
def test_its_gradient_goes_nowhere_like_torch():
    outcome = {}
    for lib in (torch, minikernel):
        leaf, view = _no_grad_view(lib)
        out = view * 2
        edges = [n is None for n, _ in out.grad_fn.next_functions]
        out.sum().backward()
        outcome[lib] = (view.requires_grad, view.is_leaf, edges, leaf.grad is None, view.grad is None)
    assert outcome[minikernel] == outcome[torch] == (True, True, [True, True], True, True)


@pytest.mark.exercise("3.3")
def test_a_built_in_node_without_edges_checks_no_saved_tensor_like_torch():
    outcome = {}
    for lib in (torch, minikernel):
        constant = lib.ones(1, 3, dtype=lib.float64)
        _, view = _no_grad_view(lib)
        out = 2.0 - constant * view  # MulBackward0 saved `constant`, for a gradient nobody takes
        constant.mul_(2)
        out.sum().backward()
        outcome[lib] = (out.grad_fn.name().removeprefix("torch::autograd::"), constant._version)
    assert outcome[minikernel] == outcome[torch]


def _product(lib):
    base = torch.autograd.Function if lib is torch else A.Function

    class Product(base):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a
    return Product


@pytest.mark.exercise("3.3")
def test_a_users_function_without_edges_still_checks_its_saved_tensors_like_torch():
    outcome = {}
    for lib in (torch, minikernel):
        constant = lib.ones(3, dtype=lib.float64)
        _, view = _no_grad_view(lib)
        out = _product(lib).apply(constant, view)
        constant.mul_(2)
        try:
            out.sum().backward()
            outcome[lib] = None
        except RuntimeError as err:
            if "exercise" in str(err):
                raise
            outcome[lib] = str(err).split(" is at version")[0].split("[")[0]
    assert outcome[minikernel] == outcome[torch] is not None


@pytest.mark.exercise("3.3")
def test_a_hook_on_it_is_accepted_and_never_runs_like_torch():
    outcome = {}
    for lib in (torch, minikernel):
        leaf, view = _no_grad_view(lib)
        calls = []
        handle = view.register_hook(lambda g, calls=calls: calls.append(g))
        (view * 2).sum().backward()
        handle.remove()
        outcome[lib] = (len(calls), leaf.grad is None, view.grad is None)
    assert outcome[minikernel] == outcome[torch] == (0, True, True)


@pytest.mark.exercise("3.3")
def test_a_one_input_built_in_node_without_edges_still_checks_its_saved_tensors_like_torch():
    """torch saves what a one-input op's backward needs whatever its edge, and checks it."""
    outcome = {}
    for lib in (torch, minikernel):
        _, view = _no_grad_view(lib)
        out = view.relu()  # ReluBackward0 saves its result
        out.add_(1)
        try:
            out.sum().backward()
            outcome[lib] = None
        except RuntimeError as err:
            if "exercise" in str(err):
                raise
            outcome[lib] = str(err).split(" is at version")[0].split("[")[0]
    assert outcome[minikernel] == outcome[torch] is not None


@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("op", ["contiguous", "view_as", "slice"])
def test_an_op_under_no_grad_that_returns_its_input_leaves_the_input_writable_like_torch(op):
    """``contiguous()`` of a contiguous view returns the view itself, a new view otherwise: only a
    *new* view made under ``no_grad`` is refused an in-place write later; the input is unchanged,
    and the gradient through its in-place write reaches the leaf."""
    outcome = {}
    for lib in (torch, minikernel):
        leaf = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        view = (leaf * 2)[1:]  # a view of a non-leaf, in grad mode
        with lib.no_grad():
            made = view.contiguous() if op == "contiguous" else view.view_as(view) if op == "view_as" else view[:]
        try:
            view.mul_(3)
            view.sum().backward()
            result = ("ok", [float(v) for v in view.detach()], [float(g) for g in leaf.grad])
        except NotImplementedError:  # a stub (a subclass of RuntimeError): the exercise is not written
            raise
        except RuntimeError as err:
            result = ("raised", "no_grad mode" in str(err))
        outcome[lib] = (made is view, result)
    assert outcome[minikernel] == outcome[torch]
