"""Exercise 8.3 (minikernel/optim/adam.py): Adam and AdamW against torch.optim."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minikernel.optim as mk_optim
from minikernel.autograd import values
from minikernel.optim import adam as mk_adam
from tests.ch08.torch_adam import documented_groups, documented_repr, torch_adam
from tests.ch08.twins import as_torch, assert_close, first_difference, gradient_runs, leaves, mk_tensor, set_grads


@st.composite
def adam_options(draw):
    return {"lr": draw(st.sampled_from([1e-3, 0.1, 0.5])),
            "betas": (draw(st.sampled_from([0.9, 0.0, 0.3, 0.99])), draw(st.sampled_from([0.999, 0.5, 0.9]))),
            "eps": draw(st.sampled_from([1e-8, 1e-3])),
            "weight_decay": draw(st.sampled_from([0.0, 0.01, 0.2])),
            "amsgrad": draw(st.booleans()), "maximize": draw(st.booleans()),
            "decoupled_weight_decay": draw(st.booleans())}


def _zeros_like(p):
    return values.wrap(np.zeros(p.shape, p.dtype))


@pytest.mark.exercise("8.3")
@given(gradient_runs(), adam_options())
def test_adam_update_matches_torch_optim_adam(run, options):
    """Your functional adam, with state you keep, against torch.optim.Adam step by step."""
    shapes, seed, steps = run
    tparams, mparams = leaves(shapes, seed=seed)
    topt = torch_adam("Adam", tparams, **options)
    state = [None] * len(shapes)
    for grads in steps:
        set_grads(tparams, mparams, grads)
        topt.step()
        have = [i for i, g in enumerate(grads) if g is not None]
        for i in have:
            if state[i] is None:
                p = mparams[i]
                state[i] = {"step": values.wrap(np.zeros((), np.float32)), "exp_avg": _zeros_like(p),
                            "exp_avg_sq": _zeros_like(p), "max_exp_avg_sq": _zeros_like(p)}
        beta1, beta2 = options["betas"]
        mk_adam.adam([mparams[i] for i in have], [mparams[i].grad for i in have],
                     [state[i]["exp_avg"] for i in have], [state[i]["exp_avg_sq"] for i in have],
                     [state[i]["max_exp_avg_sq"] for i in have] if options["amsgrad"] else [],
                     [state[i]["step"] for i in have], amsgrad=options["amsgrad"], beta1=beta1, beta2=beta2,
                     lr=options["lr"], weight_decay=options["weight_decay"], eps=options["eps"],
                     maximize=options["maximize"], decoupled_weight_decay=options["decoupled_weight_decay"])
        assert_close(mparams, tparams)
        for i, p in enumerate(tparams):
            theirs = topt.state.get(p, {})
            assert (state[i] is None) == (not theirs)
            for key, value in theirs.items():
                got = as_torch(state[i][key])
                assert got.dtype == value.dtype, f"state {key!r} of param {i}: dtype {got.dtype}, torch's {value.dtype}"
                assert torch.allclose(got, value, rtol=1e-9, atol=1e-12), (
                    f"state {key!r} of param {i}: {first_difference(got, value, 1e-9, 1e-12)}")


@pytest.mark.exercise("8.3")
def test_adam_float32_leaves_grads_alone_and_bumps_versions():
    tparams, mparams = leaves([(4,), (2, 2)], dtype=torch.float32, seed=1)
    topt = torch.optim.AdamW(tparams, lr=0.01)
    g = torch.Generator().manual_seed(2)
    state = [{"step": values.wrap(np.zeros((), np.float32)), "m": _zeros_like(p), "v": _zeros_like(p)}
             for p in mparams]
    for _ in range(20):
        set_grads(tparams, mparams, [torch.randn(p.shape, generator=g) for p in tparams])
        before = [(as_torch(p.grad), p._version) for p in mparams]
        topt.step()
        mk_adam.adam(mparams, [p.grad for p in mparams], [s["m"] for s in state], [s["v"] for s in state], [],
                     [s["step"] for s in state], amsgrad=False, beta1=0.9, beta2=0.999, lr=0.01, weight_decay=0.01,
                     eps=1e-8, maximize=False, decoupled_weight_decay=True)
        for p, (grad, version) in zip(mparams, before):
            assert torch.equal(as_torch(p.grad), grad), "adam must not change the gradient"
            assert p._version > version, "bump the parameter's version after writing it"
    assert_close(mparams, tparams, rtol=1e-5, atol=1e-6)
    assert [float(values.array(s["step"])) for s in state] == [20.0, 20.0]


@pytest.mark.exercise("8.3")
@given(gradient_runs(max_steps=6), adam_options(), st.sampled_from(["Adam", "AdamW"]), st.integers(0, 6))
def test_adam_and_adamw_classes_match_torch_with_a_checkpoint(run, options, name, stop):
    """The classes, with a state_dict save/load after `stop` steps, against torch without a break."""
    shapes, seed, steps = run
    if name == "AdamW":
        options = {k: v for k, v in options.items() if k != "decoupled_weight_decay"}
    tparams, mparams = leaves(shapes, seed=seed)
    topt, mopt = torch_adam(name, tparams, **options), getattr(mk_optim, name)(mparams, **options)
    assert repr(mopt) == documented_repr(repr(topt), name, options)
    for i, grads in enumerate(steps):
        if i == stop:
            saved = copy.deepcopy(mopt.state_dict())
            mparams = [mk_tensor(as_torch(p)).requires_grad_() for p in mparams]
            mopt = getattr(mk_optim, name)(mparams)
            mopt.load_state_dict(saved)
        set_grads(tparams, mparams, grads)
        mopt.step()
        topt.step()
        assert_close(mparams, tparams)
    mine, theirs = mopt.state_dict(), topt.state_dict()
    assert mine["param_groups"] == documented_groups(theirs["param_groups"], name, options)
    assert sorted(mine["state"]) == sorted(theirs["state"])
    for i, state in theirs["state"].items():
        assert list(mine["state"][i]) == list(state), "same state keys, in torch's order"
        for key, value in state.items():
            got = as_torch(mine["state"][i][key])
            assert got.dtype == value.dtype and got.shape == value.shape
            assert torch.allclose(got, value, rtol=1e-9, atol=1e-12), (
                f"state {key!r}: {first_difference(got, value, 1e-9, 1e-12)}")
