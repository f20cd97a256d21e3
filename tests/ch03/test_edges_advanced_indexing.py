"""Chapter 03 edge cases: indexing that mixes ints, slices, ``None``, ``...``, integer tensors and
masks, as torch computes it: the ints, slices and ``None``s first, as views, left to right, then
the tensors pick a copy. Where an int sits among the tensors decides the result's shape (numpy
treats the int as one more advanced index and can move the picked dims to the front; torch has
already selected it away), so values, shapes, the recorded node and the gradients are compared
with torch's."""
from __future__ import annotations

import pytest
import torch

from minikernel import Tensor

X = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).reshape(2, 3, 4, 5)


def _i(*values):
    return torch.tensor(values)


KEYS = {
    "int, slice, tensor": (0, slice(None), _i(0, 1)),
    "tensor, slice, int": (_i(0, 1), slice(None), 0),
    "tensor, int": (_i(1, 0), 2),
    "two tensors split by a slice": (slice(None), _i(0, 2), slice(1, 3), _i(1, 3)),
    "..., tensor": (Ellipsis, _i(0, 4)),
    "tensor, ..., tensor": (_i(1), Ellipsis, _i(2, 0)),
    "None, tensor": (None, _i(0, 1)),
    "int, None, tensor, int": (0, None, _i(2, 1), 1),
    "2-d mask": (X[:, :, 0, 0] > 30,),
    "int, mask": (1, X[0, :, :, 0] > 5),
    "slice, mask, tensor": (slice(None), X[0, :, 0, 0] > 20, _i(1, 2)),
    "adjacent tensors": (_i(0, 1), _i(2, 0)),
    "2-d index tensor": (torch.tensor([[0, 1], [1, 0]]),),
    "step slice, tensor, None, ...": (slice(None, None, 2), _i(0), None, Ellipsis),
    "three ints, repeated tensor": (0, 1, 2, _i(4, 0, 4)),
}


@pytest.mark.exercise("3.3")
@pytest.mark.parametrize("name", list(KEYS))
def test_mixed_indexing_like_torch(name):
    key = KEYS[name]
    theirs = X.clone().requires_grad_()
    mine = Tensor.from_torch(X.clone()).requires_grad_()
    expected = theirs[key]
    got = mine[tuple(Tensor.from_torch(k) if isinstance(k, torch.Tensor) else k for k in key)]
    assert got.shape == tuple(expected.shape)
    assert torch.equal(got.to_torch(), expected.detach())
    assert got.grad_fn.name() == type(expected.grad_fn).__name__
    g = torch.randn(expected.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    expected.backward(g)
    got.backward(Tensor.from_torch(g.clone()))  # a repeated index adds its gradients up
    assert torch.equal(mine.grad.to_torch(), theirs.grad)


@pytest.mark.parametrize("key", [(slice(None, None, 0),), (slice(None, None, -1),), (None, slice(1, None, 0)),
                                 (Ellipsis, slice(None, None, -2))], ids=["step 0", "step -1", "None, step 0",
                                                                          "..., step -2"])
def test_a_slice_step_that_is_not_positive_raises_torchs_error(key):
    with pytest.raises(ValueError) as theirs:
        X[key]
    with pytest.raises(ValueError) as mine:
        Tensor.from_torch(X)[key]
    assert str(mine.value) == str(theirs.value)
