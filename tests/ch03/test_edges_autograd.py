"""Chapter 03 edge cases: gradients accumulated over several backward passes.

``.grad`` of a leaf adds every backward pass's gradient to what is there (exercise
3.3, ``accumulate_grad``), and never shares memory with a tensor the caller still
holds. The values here are ordinary (order 1), so replacing instead of adding, or
keeping a reference instead of a copy, changes ``.grad`` visibly.
"""
from __future__ import annotations

import pytest
import torch

from minikernel import Tensor
from tests.helpers import leaves_pair

VALUES = torch.tensor([1.5, -2.0, 0.5, 3.0], dtype=torch.float64)


def _as_torch(t) -> torch.Tensor:
    return t if isinstance(t, torch.Tensor) else t.to_torch()


@pytest.mark.exercise("3.3")
def test_grad_accumulates_ordinary_values_over_three_backward_passes():
    theirs, mine = leaves_pair(VALUES)
    for step in range(1, 4):
        gradient = torch.tensor([0.25, -1.0, 2.0, 0.5], dtype=torch.float64) * step  # ordinary, per element
        theirs[0].add(theirs[0]).backward(gradient)  # add's backward is not an exercise: this is 3.3 alone
        mine[0].add(mine[0]).backward(Tensor.from_torch(gradient))
        assert torch.equal(_as_torch(mine[0].grad), theirs[0].grad), (
            f"after backward pass {step}: .grad is {mine[0].grad}, torch's {theirs[0].grad} "
            "(each pass adds its gradient to .grad)")


@pytest.mark.exercise("3.3")
def test_grad_of_a_sum_accumulates_over_two_passes():
    theirs, mine = leaves_pair(VALUES)
    for _ in range(2):
        for x in (theirs[0], mine[0]):
            x.sum().backward()  # the incoming gradient is a broadcast of ones
    assert torch.equal(_as_torch(mine[0].grad), theirs[0].grad)


@pytest.mark.exercise("3.3")
def test_grad_does_not_alias_the_gradient_passed_in():
    theirs, mine = leaves_pair(VALUES)
    g_theirs = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    g_mine = Tensor.from_torch(g_theirs.clone())
    theirs[0].backward(g_theirs)  # a leaf as the root: its gradient arrives as given
    mine[0].backward(g_mine)
    (theirs[0] + 0.0).backward(g_theirs)  # the second pass adds to .grad in place
    (mine[0] + 0.0).backward(g_mine)
    g_theirs.add_(100.0)
    g_mine.add_(100.0)
    assert torch.equal(_as_torch(mine[0].grad), theirs[0].grad), (
        f".grad changed with the tensor passed to backward(): {mine[0].grad} vs torch's {theirs[0].grad}; "
        "store a copy the first time, add in place after")
    assert torch.equal(g_mine.to_torch(), g_theirs), "backward() changed the gradient passed in"


@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("dims", [(), (0,), (-1, 0), (2, 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_several_dims_give_torchs_values_shapes_and_gradients(name, dims, keepdim):
    t = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4) / 7
    theirs, mine = t.clone().requires_grad_(), Tensor.from_torch(t).requires_grad_()
    outs = [getattr(x, name)(dims, keepdim) for x in (theirs, mine)]
    assert outs[1].shape == tuple(outs[0].shape)
    gradient = torch.arange(1, outs[0].numel() + 1, dtype=torch.float64).reshape(outs[0].shape) / 3
    outs[0].backward(gradient)  # a gradient that differs per output element
    outs[1].backward(Tensor.from_torch(gradient))
    assert torch.allclose(_as_torch(mine.grad), theirs.grad, rtol=1e-12, atol=0)
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times"):
        getattr(mine, name)((1, -2))
