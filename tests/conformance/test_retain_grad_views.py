"""``retain_grad()`` on views whose base was written in place, against torch: torch decides "leaf"
from the node the tensor holds, without remaking a view's history, so it is a no-op (and raises
nothing) for a view without a node, also one taken under ``no_grad`` whose base changed since;
a view with a node retains the gradient of its latest version."""
from __future__ import annotations

import pytest
import torch

import minikernel


def _view_of_a_constant_written_with_grad(lib):
    base, value = lib.ones(2, 3, dtype=lib.float64), lib.ones(3, dtype=lib.float64, requires_grad=True)
    view = base[0]
    base.add_(value)
    return view


def _no_grad_view_of_a_leaf_written_since(lib):
    leaf = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
    with lib.no_grad():
        view = leaf.permute(1, 0)
        leaf.relu_()
    return view


def _view_of_a_non_leaf_written_since(lib):
    base = lib.ones(2, 3, dtype=lib.float64, requires_grad=True) * 1
    view = base[0]
    base.mul_(2)
    return view


MAKERS = [_view_of_a_constant_written_with_grad, _no_grad_view_of_a_leaf_written_since,
          _view_of_a_non_leaf_written_since]


@pytest.mark.parametrize("make", MAKERS, ids=lambda f: f.__name__.strip("_"))
def test_retain_grad_on_a_view_whose_base_was_written_like_torch(make):
    outcome = {}
    for lib in (torch, minikernel):
        view = make(lib)
        try:
            view.retain_grad()
            outcome[lib] = view.retains_grad
        except RuntimeError as err:
            outcome[lib] = str(err)
    assert outcome[minikernel] == outcome[torch]


@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("make", [MAKERS[0], MAKERS[2]], ids=lambda f: f.__name__.strip("_"))
def test_the_gradient_retained_then_like_torch(make):
    outcome = {}
    for lib in (torch, minikernel):
        view = make(lib)
        view.retain_grad()
        (view * 2).sum().backward()
        outcome[lib] = None if view.grad is None else view.grad.tolist()
    assert outcome[minikernel] == outcome[torch]
