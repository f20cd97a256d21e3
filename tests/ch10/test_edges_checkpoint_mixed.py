"""Exercise 10.1 at its edges: integer and frozen tensor arguments, and segments whose outputs mix
tensors that need a gradient, tensors that need none, integer tensors and non-tensors.

Oracle: ``torch.utils.checkpoint.checkpoint(..., use_reentrant=True)`` on the same function and
arguments: the gradients of every argument and of the weights used inside, and the values.
"""
from __future__ import annotations

import pytest
import torch
from torch.utils import checkpoint as torch_ckpt

from minikernel.utils import checkpoint as mk_ckpt


def _weight():
    return torch.nn.Parameter(torch.linspace(-1.0, 2.0, 5, dtype=torch.float64))


def _indices(x, idx, frozen, w):
    """An int64 index tensor and a frozen float tensor among the arguments."""
    return (x[idx] * w[: idx.numel()] * frozen[: idx.numel()]).sin()


def _mixed_outputs(x, idx, frozen, w):
    """A tensor needing a gradient, one that needs none (from the frozen argument only), an integer
    tensor, a Python int and None."""
    return (x.cos() * w, frozen * 2.0, idx + 1, 3, None)


def _only_frozen_outputs_but_one(x, idx, frozen, w):
    return (frozen.exp(), (x * w).sum(), idx.sum())


CASES = {"int and frozen arguments": _indices, "mixed outputs": _mixed_outputs,
         "one output of three needs a gradient": _only_frozen_outputs_but_one}


def _run(checkpoint, fn):
    x = torch.linspace(0.1, 1.3, 5, dtype=torch.float64).requires_grad_()
    idx = torch.tensor([4, 0, 2])
    frozen = torch.linspace(2.0, 3.0, 5, dtype=torch.float64)
    w = _weight()
    out = checkpoint(fn, x, idx, frozen, w, use_reentrant=True)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o.double() * (k + 1)).sum() for k, o in enumerate(outs) if torch.is_tensor(o) and o.requires_grad)
    loss.backward()
    values = [o.detach() if torch.is_tensor(o) else o for o in outs]
    return values, x.grad, w.grad, idx.grad, frozen.grad


@pytest.mark.exercise("10.1")
@pytest.mark.parametrize("case", list(CASES))
def test_mixed_arguments_and_outputs_like_torch(case):
    """Only tensor outputs that require a gradient are backpropagated (others, and non-tensors, are
    skipped); each saved argument keeps its own ``requires_grad`` (an integer tensor cannot require
    one, a frozen one gets no gradient)."""
    fn = CASES[case]
    expected = _run(torch_ckpt.checkpoint, fn)
    got = _run(mk_ckpt.checkpoint, fn)
    for what, g, e in zip(["outputs", "x.grad", "weight.grad", "int argument's grad", "frozen argument's grad"],
                          got, expected):
        if what == "outputs":
            assert len(g) == len(e) and all(
                torch.equal(a, b) if torch.is_tensor(b) else a == b for a, b in zip(g, e)), f"{case}: {what}"
        elif e is None:
            assert g is None, f"{case}: {what} is {g}; torch leaves it None"
        else:
            torch.testing.assert_close(g, e, rtol=1e-12, atol=0, msg=lambda m, what=what: f"{case}: {what}: {m}")
