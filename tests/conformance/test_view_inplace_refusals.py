"""In-place writes torch refuses on views made by a multi-output op (``unbind``) or under
``no_grad``, written directly or through the base (then refused when the view's ``grad_fn`` is
next read), against torch: whether it raises, the type, and the message word for word (its first
sentence depends on whether the view has a ``grad_fn``, the second on how the view was made)."""
from __future__ import annotations

import pytest
import torch

import minikernel


def _rg(lib):
    return lib.ones(2, 3, requires_grad=True)


def _multi_of_non_leaf(lib):
    lib_u = (_rg(lib) * 1).unbind(0)
    lib_u[0].add_(1)


def _multi_of_constant_written_with_grad(lib):
    lib.ones(2, 3).unbind(0)[0].add_(lib.ones(3, requires_grad=True))


def _view_of_multi_of_constant(lib):
    lib.ones(2, 3).unbind(0)[0][1:].add_(lib.ones(2, requires_grad=True))


def _view_of_multi_of_non_leaf(lib):
    (_rg(lib) * 1).unbind(0)[1][1:].add_(lib.ones(2, requires_grad=True))


def _no_grad_view(lib):
    a = _rg(lib) * 1
    with lib.no_grad():
        v = a[0]
    v.add_(1)


def _no_grad_view_of_constant_written_with_grad(lib):
    with lib.no_grad():
        v = lib.ones(2, 3)[0]
    v.add_(lib.ones(3, requires_grad=True))


def _view_of_no_grad_view(lib):
    a = _rg(lib) * 1
    with lib.no_grad():
        v = a[0]
    v[1:].add_(1)


def _no_grad_multi_view(lib):
    a = _rg(lib) * 1
    with lib.no_grad():
        u = a.unbind(0)
    u[0].add_(1)


def _multi_view_of_no_grad_view(lib):
    a = _rg(lib) * 1
    with lib.no_grad():
        v = a[:, 1:]
    v.unbind(0)[0].add_(1)


def _base_written_then_multi_grad_fn(lib):
    a = _rg(lib) * 1
    u = a.unbind(0)
    a.mul_(2)
    return u[1].grad_fn


def _base_written_then_no_grad_view_grad_fn(lib):
    a = _rg(lib) * 1
    with lib.no_grad():
        v = a[0]
    a.mul_(2)
    return v.grad_fn


def _constant_base_written_with_grad_then_multi_grad_fn(lib):
    a = lib.ones(2, 3)
    u = a.unbind(0)
    a.add_(lib.ones(3, requires_grad=True))
    return u[0].grad_fn


def _constant_base_written_without_grad_then_multi_grad_fn(lib):
    a = lib.ones(2, 3)
    u = a.unbind(0)
    a.add_(1)
    return u[0].grad_fn


def _sibling_written_then_multi_grad_fn(lib):
    a = _rg(lib) * 1
    u = a.unbind(0)
    a[0].add_(lib.ones(3, requires_grad=True))
    return u[1].grad_fn


def _multi_written_then_indexed_out_of_range(lib):
    """torch's autograd layer takes the view's edge (and refuses it) before the kernel checks the index."""
    u = (_rg(lib) * 1).unbind(0)[1]
    with lib.no_grad():
        u.mul_(2)
    return u[lib.tensor([5, 0])].grad_fn


CASES = [_multi_of_non_leaf, _multi_of_constant_written_with_grad, _view_of_multi_of_constant,
         _view_of_multi_of_non_leaf, _no_grad_view, _no_grad_view_of_constant_written_with_grad,
         _view_of_no_grad_view, _no_grad_multi_view, _multi_view_of_no_grad_view, _base_written_then_multi_grad_fn,
         _base_written_then_no_grad_view_grad_fn, _constant_base_written_with_grad_then_multi_grad_fn,
         _constant_base_written_without_grad_then_multi_grad_fn, _sibling_written_then_multi_grad_fn,
         _multi_written_then_indexed_out_of_range]


def _outcome(case, lib):
    try:
        out = case(lib)
    except RuntimeError as err:
        return "raised", str(err)
    node = out.name().removeprefix("torch::autograd::") if out is not None else None
    return "ran", node


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_refusal_and_message_like_torch(case):
    expected = _outcome(case, torch)
    got = _outcome(case, minikernel)
    assert got == expected
