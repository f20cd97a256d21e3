"""A GradScaler driving a minikernel optimizer through TorchGradView (torch's scaler here,
so that only chapter 08's exercises are needed)."""
from __future__ import annotations

import pytest
import torch

import minikernel as mk
import minikernel.optim as mk_optim
from tests.ch08.twins import as_torch, assert_close, leaves, set_grads

INF = float("inf")


@pytest.mark.exercise("8.2")
def test_scaler_unscales_minikernel_grads_in_place_and_skips_steps_like_torch():
    tparams, mparams = leaves([(3,), (2,)], dtype=torch.float32)
    topt = torch.optim.SGD(tparams, lr=0.1, momentum=0.9)
    mopt = mk_optim.SGD(mparams, lr=0.1, momentum=0.9)
    view = mk_optim.TorchGradView(mopt)
    scalers = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2), \
        torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    g = torch.Generator().manual_seed(0)
    for step in range(6):
        grads = [torch.randn(p.shape, generator=g) for p in tparams]
        if step == 3:
            grads[1][0] = INF
        for scaler in scalers:
            scaler.scale(torch.ones(()))  # creates the scale, as scale(loss) does
        scaled = [gr * scalers[0].get_scale() for gr in grads]
        set_grads(tparams, mparams, scaled)
        kept = mparams[0].grad
        scalers[0].unscale_(topt)
        scalers[1].unscale_(view)
        assert mparams[0].grad is kept, "unscale_ works in place on the minikernel gradient"
        assert_close([p.grad for p in mparams], [p.grad for p in tparams], rtol=0, atol=0, what="gradient")
        scalers[0].step(topt)
        scalers[1].step(view)
        for scaler in scalers:
            scaler.update()
        assert scalers[0].get_scale() == scalers[1].get_scale()
        assert_close(mparams, tparams, rtol=1e-6, atol=1e-7)


@pytest.mark.exercise("8.1")
def test_view_shares_memory_and_scale_loss_records_the_product():
    _, (p,) = leaves([(2,)], dtype=torch.float32)
    opt = mk_optim.SGD([p], lr=0.1)
    p.grad = mk.tensor([2.0, 4.0])
    shared = mk_optim.TorchGradView(opt).param_groups[0]["params"][0]
    shared.grad.mul_(0.5)
    assert as_torch(p.grad).tolist() == [1.0, 2.0]
    assert mk_optim.TorchGradView(opt).param_groups[0]["lr"] == 0.1
    scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
    scaled = mk_optim.scale_loss(scaler, mk.tensor(1.5, requires_grad=True))
    assert scaled.item() == 12.0 and scaled.grad_fn is not None
    with pytest.raises(TypeError, match="wraps a minikernel optimizer"):
        mk_optim.TorchGradView(torch.optim.SGD([torch.zeros(1, requires_grad=True)]))
