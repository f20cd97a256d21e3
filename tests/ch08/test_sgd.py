"""Exercise 8.2 (minikernel/optim/sgd.py): SGD against torch.optim over gradient sequences."""
from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, strategies as st

import minikernel.optim as mk_optim
from minikernel.optim import sgd as mk_sgd
from tests.ch08.twins import as_torch, assert_close, gradient_runs, leaves, mk_tensor, set_grads


@st.composite
def sgd_options(draw):
    momentum = draw(st.sampled_from([0.0, 0.5, 0.9, 0.99]))
    nesterov = momentum > 0 and draw(st.booleans())
    return {"lr": draw(st.sampled_from([0.1, 0.01, 1.0, 0.0])), "momentum": momentum,
            "dampening": 0.0 if nesterov else draw(st.sampled_from([0.0, 0.1, 0.5])),
            "weight_decay": draw(st.sampled_from([0.0, 0.01, 0.3])), "nesterov": nesterov,
            "maximize": draw(st.booleans())}


@pytest.mark.exercise("8.2")
@given(gradient_runs(), sgd_options())
def test_sgd_update_matches_torch_optim_sgd(run, options):
    """Your functional sgd, driven step by step, against torch.optim.SGD."""
    shapes, seed, steps = run
    tparams, mparams = leaves(shapes, seed=seed)
    topt = torch.optim.SGD(tparams, **options)
    buffers = [None] * len(shapes)
    for grads in steps:
        set_grads(tparams, mparams, grads)
        topt.step()
        have = [i for i, g in enumerate(grads) if g is not None]
        mine = [buffers[i] for i in have] if options["momentum"] != 0 else []
        mk_sgd.sgd([mparams[i] for i in have], [mparams[i].grad for i in have], mine,
                   **{k: options[k] for k in ("weight_decay", "momentum", "lr", "dampening", "nesterov", "maximize")})
        for i, buffer in zip(have, mine):
            buffers[i] = buffer
        assert_close(mparams, tparams)
        for i, p in enumerate(tparams):
            expected = topt.state[p].get("momentum_buffer")
            assert (buffers[i] is None) == (expected is None), f"momentum buffer {i}: made when torch's is not"
            if expected is not None:
                assert torch.allclose(as_torch(buffers[i]), expected, rtol=1e-9, atol=1e-12), f"momentum buffer {i}"


@pytest.mark.exercise("8.2")
def test_sgd_leaves_grads_alone_copies_the_first_buffer_and_bumps_versions():
    _, (p,) = leaves([(3,)])
    p.grad = mk_tensor(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    before, version = as_torch(p.grad), p._version
    buffers = [None]
    mk_sgd.sgd([p], [p.grad], buffers, weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True,
               maximize=True)
    assert torch.equal(as_torch(p.grad), before), "sgd must not change the gradient"
    assert buffers[0] is not None and buffers[0] is not p.grad, "the first momentum buffer is a new tensor"
    assert p._version > version, "bump the parameter's version after writing it (param._bump_version())"


@pytest.mark.exercise("8.2")
def test_sgd_float32_matches_torch():
    tparams, mparams = leaves([(5,), (2, 3)], dtype=torch.float32, seed=3)
    topt = torch.optim.SGD(tparams, lr=0.05, momentum=0.9, weight_decay=1e-2)
    g = torch.Generator().manual_seed(4)
    buffers = [None, None]
    for _ in range(10):
        grads = [torch.randn(p.shape, generator=g) for p in tparams]
        set_grads(tparams, mparams, grads)
        topt.step()
        mk_sgd.sgd(mparams, [p.grad for p in mparams], buffers, weight_decay=1e-2, momentum=0.9, lr=0.05,
                   dampening=0.0, nesterov=False, maximize=False)
    assert_close(mparams, tparams, rtol=1e-5, atol=1e-6)


@pytest.mark.exercise("8.2")
@given(gradient_runs(max_params=4), sgd_options(), st.data())
def test_sgd_class_with_param_groups_matches_torch(run, options, data):
    """The whole optimizer: groups with their own options, params without a gradient skipped."""
    shapes, seed, steps = run
    tparams, mparams = leaves(shapes, seed=seed)
    split = data.draw(st.integers(1, len(shapes)))
    override = data.draw(st.sampled_from([{}, {"lr": 0.5}, {"momentum": 0.0}, {"weight_decay": 0.1}]))
    if options["nesterov"] and override.get("momentum", 1) == 0:
        override = {}
    defaults = dict(options)

    def groups(params):
        return [{"params": params[:split]}, {"params": params[split:], **override}] if split < len(params) \
            else [{"params": params}]

    mopt = mk_optim.SGD(groups(mparams), **defaults)
    topt = torch.optim.SGD(groups(tparams), **defaults)
    assert repr(mopt) == repr(topt)
    for grads in steps:
        set_grads(tparams, mparams, grads)
        assert mopt.step() is None
        topt.step()
        assert_close(mparams, tparams)
    mine, theirs = mopt.state_dict(), topt.state_dict()
    assert mine["param_groups"] == theirs["param_groups"]
    assert sorted(mine["state"]) == sorted(theirs["state"])
    for i, state in theirs["state"].items():
        assert torch.allclose(as_torch(mine["state"][i]["momentum_buffer"]), state["momentum_buffer"])


@pytest.mark.exercise("8.2")
@given(gradient_runs(max_steps=6, allow_none=False), sgd_options(), st.integers(1, 5))
def test_sgd_state_dict_round_trip_resumes_like_torch(run, options, stop):
    """Save after `stop` steps, load into a new optimizer over new parameters, carry on:
    the same parameters as torch training without a break."""
    shapes, seed, steps = run
    tparams, mparams = leaves(shapes, seed=seed)
    topt, mopt = torch.optim.SGD(tparams, **options), mk_optim.SGD(mparams, **options)
    for i, grads in enumerate(steps):
        if i == stop:
            saved = copy.deepcopy(mopt.state_dict())
            mparams = [mk_tensor(as_torch(p)).requires_grad_() for p in mparams]
            mopt = mk_optim.SGD(mparams, lr=123.0)  # options come back from the checkpoint
            mopt.load_state_dict(saved)
        set_grads(tparams, mparams, grads)
        mopt.step()
        topt.step()
    assert_close(mparams, tparams)
    assert mopt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]


@pytest.mark.exercise("8.2")
def test_zero_grad_none_or_zeros_and_skipped_steps_like_torch():
    tparams, mparams = leaves([(2,), (3,)])
    mopt = mk_optim.SGD(mparams, lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(tparams, lr=0.1, momentum=0.9)
    set_grads(tparams, mparams, [torch.ones(2, dtype=torch.float64), torch.ones(3, dtype=torch.float64)])
    mopt.step()
    topt.step()
    kept = mparams[0].grad
    mopt.zero_grad(set_to_none=False)
    topt.zero_grad(set_to_none=False)
    assert mparams[0].grad is kept and as_torch(kept).tolist() == [0.0, 0.0], "set_to_none=False zeroes in place"
    mopt.step()  # a zero gradient still moves the parameter under momentum
    topt.step()
    assert_close(mparams, tparams)
    mopt.zero_grad()
    topt.zero_grad()
    assert [p.grad for p in mparams] == [None, None] == [p.grad for p in tparams]
    mopt.step()  # no gradient: no step at all
    topt.step()
    assert_close(mparams, tparams)
