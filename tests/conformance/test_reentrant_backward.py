"""Reentrant backward a thousand levels deep: a chain of custom Functions whose backward
runs ``backward()`` (or ``autograd.grad``) on the previous link, against torch. Torch's
engine moves a deep nested backward to a fresh thread; minikernel must complete too
(its Python stack alone overflowed near 150 levels), with the caller's grad mode carried
along, and an error raised deep inside must come out of the outer call."""
from __future__ import annotations

import pytest
import torch

import minikernel as mk

DEPTH = 1000  # more than six times the depth at which one thread's stack ran out


def _link(lib, use_grad, seen):
    class Link(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, inner):
            ctx.inner, ctx.x = inner[0], x
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(lib.is_grad_enabled())
            if ctx.inner is not None:
                if ctx.inner is _RAISE:
                    raise ValueError("raised by the deepest link")
                with lib.enable_grad():
                    if use_grad:
                        (inner_grad,) = lib.autograd.grad(ctx.inner.sum(), ctx.x)
                        g = g + inner_grad
                    else:
                        ctx.inner.sum().backward()
            return g * 2, None

    return Link


_RAISE = object()


def _chain(lib, depth, use_grad=False, deepest=None):
    """``depth + 1`` links on one leaf, link i's backward differentiating link i-1's output;
    returns the leaf, the outer output and what each backward saw."""
    seen: list = []
    Link = _link(lib, use_grad, seen)
    leaf = lib.tensor([1.5], requires_grad=True)
    prev = deepest
    for _ in range(depth + 1):
        prev = Link.apply(leaf, [prev])
    return leaf, prev, seen


@pytest.mark.exercise("3.3")
def test_a_thousand_nested_backward_calls_complete_like_torch():
    results = []
    for lib in (torch, mk):
        leaf, out, seen = _chain(lib, DEPTH)
        out.sum().backward()
        results.append((leaf.grad.tolist(), len(seen), set(seen)))
    assert results[1] == results[0]
    assert results[1][2] == {False}, "grad mode inside backward must be the caller's (off), on every thread"


@pytest.mark.exercise("3.7")
def test_a_thousand_nested_autograd_grad_calls_complete_like_torch():
    results = []
    for lib in (torch, mk):
        leaf, out, seen = _chain(lib, DEPTH, use_grad=True)
        (g,) = lib.autograd.grad(out.sum(), leaf)
        results.append((g.tolist(), len(seen)))
    assert results[1] == results[0]


@pytest.mark.exercise("3.3")
def test_an_error_deep_in_nested_backward_reaches_the_outer_call_like_torch():
    for lib in (torch, mk):
        leaf, out, _ = _chain(lib, 300, deepest=_RAISE)
        with pytest.raises(ValueError, match="raised by the deepest link"):
            out.sum().backward()
