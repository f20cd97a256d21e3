"""Exercises 8.1, 8.2 and 8.5 at spots the other tests leave open: a named parameter after an
unnamed one, the momentum buffer a caller holds between steps, and gradients and norms of two
dtypes (float32 beside float64).

Oracles: ``torch.optim.SGD`` (its errors and its ``state``), ``torch.nn.utils.get_total_norm``
and ``torch.nn.utils.clip_grads_with_norm_``.
"""
from __future__ import annotations

import pytest
import torch

import minikernel as mk
from minikernel import clip_grad as C
from minikernel.optim import sgd as mk_sgd
from tests.ch08.twins import as_torch, leaves, mk_tensor

NAMES_MISSING = "all optimizer params should be with/without names. Some param names are missing"


@pytest.mark.exercise("8.1")
def test_a_named_parameter_after_an_unnamed_one_is_refused_like_torch():
    """Named or not is decided over all the items: a ``(name, tensor)`` pair after a bare tensor is a mix."""
    tw, tb = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="Some param names are missing"):
        torch.optim.SGD([tw, ("b", tb)], lr=0.1)
    w, b = mk.ones(2, requires_grad=True), mk.ones(2, requires_grad=True)
    with pytest.raises(ValueError) as err:
        mk.optim.SGD([w, ("b", b)], lr=0.1)
    assert str(err.value) == NAMES_MISSING


@pytest.mark.exercise("8.2")
def test_an_existing_momentum_buffer_is_updated_in_place_like_torchs():
    """The buffer tensor a caller (the optimizer's ``state``) holds after the first step is the one
    the second step updates: torch keeps the same tensor, with the new values in it."""
    tparams, (p,) = leaves([(3,)])
    topt = torch.optim.SGD(tparams, lr=0.1, momentum=0.9, dampening=0.25)
    grads = [torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64), torch.tensor([0.25, 3.0, -1.0], dtype=torch.float64)]
    buffers = [None]
    held = None
    for k, g in enumerate(grads):
        tparams[0].grad = g.clone()
        topt.step()
        p.grad = mk_tensor(g)
        mk_sgd.sgd([p], [p.grad], buffers, weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.25,
                   nesterov=False, maximize=False)
        if k == 0:
            held, torch_held = buffers[0], topt.state[tparams[0]]["momentum_buffer"]
    assert topt.state[tparams[0]]["momentum_buffer"] is torch_held
    assert buffers[0] is held, "update the existing momentum buffer in place; do not put a new tensor in the list"
    torch.testing.assert_close(as_torch(held), torch_held, rtol=1e-12, atol=1e-12)


@pytest.mark.exercise("8.5")
@pytest.mark.parametrize("order", [(torch.float32, torch.float64), (torch.float64, torch.float32)])
def test_the_total_norm_of_float32_and_float64_gradients_is_float64_like_torch(order):
    """The per-tensor norms are promoted together (torch stacks them): float64 whichever comes first."""
    g = torch.Generator().manual_seed(3)
    ts = [torch.randn(5, generator=g, dtype=dtype) * 0.1 for dtype in order]
    expected = torch.nn.utils.get_total_norm(ts)
    got = as_torch(C.get_total_norm([mk_tensor(t) for t in ts]))
    assert got.dtype == expected.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=0)


@pytest.mark.exercise("8.5")
def test_float32_gradients_are_scaled_by_a_float64_factor_rounded_to_float32_like_torch():
    """With a float64 ``total_norm`` the factor is computed in float64, then each float32 gradient
    is multiplied by the factor converted to float32 (torch's ``g.mul_(coef)``), bit for bit."""
    g = torch.Generator().manual_seed(5)
    grads = [torch.randn(400, generator=g) * 3, torch.randn(7, 9, generator=g).t()]
    total = torch.tensor(123.456, dtype=torch.float64)
    tparams = [torch.nn.Parameter(torch.zeros(x.shape)) for x in grads]
    for tp, x in zip(tparams, grads):
        tp.grad = x.clone()
    torch.nn.utils.clip_grads_with_norm_(tparams, 1.0, total)
    params = [mk.zeros(*x.shape, requires_grad=True) for x in grads]
    for p, x in zip(params, grads):
        p.grad = mk_tensor(x)
    C.clip_grads_with_norm_(params, 1.0, mk_tensor(total))
    for p, tp in zip(params, tparams):
        got = as_torch(p.grad)
        assert got.dtype == torch.float32
        assert torch.equal(got, tp.grad), f"{(got != tp.grad).sum().item()} of {got.numel()} elements differ"
