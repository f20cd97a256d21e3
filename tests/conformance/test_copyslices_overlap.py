"""An indexed write, with a value that requires grad, into an expanded view (one whose elements
share memory) of a tensor that does not require grad, then backward, against torch: the base's
new history (``CopySlices``) makes no gradient for the base, whose previous history takes none,
so the expanded view's gradient is never written back (torch refuses that only when it is) and
the value gets its gradient."""
from __future__ import annotations

import pytest
import torch

import minikernel


def _run(lib, base_requires_grad):
    leaf = lib.tensor([[0.5], [1.5]], dtype=lib.float64, requires_grad=base_requires_grad)
    base = leaf * 1 if base_requires_grad else leaf.detach()
    view = base.expand(2, 2, 1)
    value = lib.tensor([3.0], dtype=lib.float64, requires_grad=True)
    view[[0], [1]] = value
    try:
        ((base * lib.tensor([[2.0], [5.0]], dtype=lib.float64)).sum() + view.sum()).backward()
    except RuntimeError as err:
        if "exercise" in str(err):
            raise
        return type(err).__name__, str(err)
    return base.grad_fn.name().removeprefix("torch::autograd::"), value.grad.tolist(), None if leaf.grad is None else leaf.grad.tolist()


@pytest.mark.exercise("3.3")
@pytest.mark.filterwarnings("ignore:Use of index_put_ on expanded tensors")
@pytest.mark.parametrize("base_requires_grad", [False, True])
def test_write_into_an_expanded_view_then_backward_like_torch(base_requires_grad):
    assert _run(minikernel, base_requires_grad) == _run(torch, base_requires_grad)
