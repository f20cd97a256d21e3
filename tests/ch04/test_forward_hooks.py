"""Exercise 4.2: forward pre-hooks and forward hooks, in torch's order, with torch's replacements.

Every test builds the same model in torch and in minikernel (tests/ch04/twins.py),
hangs the same recording hooks on both and compares what the hooks saw, in which
order, and what came out. The minikernel side always runs first, so that in
student mode the first unfinished function reached is exercise 4.2's.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from tests.ch04.twins import (CLASSES, FRAMEWORKS, MK, TORCH, WIDTH, HookError, HookSpec, build, hook_specs,
                              make_weights, names, no_global_hooks, outcome, register, same, specs, summary)


def _input(seed: int, fw, requires_grad: bool = False):
    x = torch.randn(2, WIDTH, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    return fw.tensor(x, requires_grad)


def _run(spec, hooks, seed, calls: int = 1):
    """Build, hook and call the model on both sides: {framework: (events, outcome, warnings)}."""
    weights = make_weights(spec, seed)
    seen = {}
    with no_global_hooks():
        for fw in FRAMEWORKS:  # MK first
            model = build(spec, fw, weights)
            modules, events = list(model.modules()), []
            for h in hooks:
                register(h, fw, modules, events, names(model))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                results = [outcome(model, _input(seed, fw)) for _ in range(calls)]
            seen[fw.name] = (events, [(kind, summary(value) if kind == "ok" else value) for kind, value in results],
                             [str(w.message) for w in caught])
    return seen


@pytest.mark.exercise("4.2")
@given(spec=specs(), hooks=hook_specs(("pre", "fwd"), ("none", "scale", "single")).filter(bool),
       seed=st.integers(0, 3))
def test_hooks_fire_in_torchs_order_with_torchs_arguments(spec, hooks, seed):
    seen = _run(spec, hooks, seed, calls=2)
    same(seen["minikernel"], seen["torch"])


@pytest.mark.exercise("4.2")
@given(spec=specs(), hooks=hook_specs(("pre", "fwd"), ("none", "scale", "raise")).filter(
    lambda hs: any(h.action == "raise" for h in hs)), seed=st.integers(0, 3))
def test_an_exception_in_a_hook_propagates_after_the_always_call_hooks(spec, hooks, seed):
    seen = _run(spec, hooks, seed, calls=2)
    same(seen["minikernel"], seen["torch"])
    # every module of the tree runs, so the raising hook always fires
    assert [(kind, value[0]) for kind, value in seen["torch"][1]] == [("raised", HookError.__name__)] * 2


@pytest.mark.exercise("4.2")
def test_a_pre_hook_result_replaces_the_input_and_a_single_value_is_wrapped():
    for action in ("scale", "single"):
        hooks = [HookSpec("pre", 0, action, tag=0), HookSpec("fwd", 0, "none", tag=1)]
        seen = _run("double", hooks, seed=1)
        same(seen["minikernel"], seen["torch"])
        # the forward hook saw the halved input (a 1-tuple), and the output is 2 * x / 2
        events, results, _ = seen["minikernel"]
        assert events[1][3][0][1].tolist() == pytest.approx(events[0][3][0][1] / 2)


@pytest.mark.exercise("4.2")
def test_global_hooks_run_before_the_modules_own_and_prepend_goes_first():
    hooks = [HookSpec("pre", 0, tag=0), HookSpec("pre", None, tag=1), HookSpec("pre", 0, prepend=True, tag=2),
             HookSpec("fwd", 0, tag=3), HookSpec("fwd", None, tag=4), HookSpec("fwd", 0, prepend=True, tag=5)]
    seen = _run(("chain", ["double", "tanh"]), hooks, seed=0)
    same(seen["minikernel"], seen["torch"])
    order = [(e[0], e[1], e[2]) for e in seen["minikernel"][0]]
    assert order[:5] == [("pre", 1, "<root>"), ("pre", 2, "<root>"), ("pre", 0, "<root>"),
                         ("pre", 1, "0"), ("fwd", 4, "0")]


@pytest.mark.exercise("4.2")
@pytest.mark.parametrize("result", ["oops", ((1.0,), {}, 3)])
def test_a_with_kwargs_pre_hook_must_return_args_and_kwargs(result):
    outcomes = {}
    for fw in FRAMEWORKS:
        module = CLASSES[fw.name].Shift()
        module.register_forward_pre_hook(lambda m, args, kwargs: result, with_kwargs=True)
        outcomes[fw.name] = outcome(module, _input(0, fw), by=2.0)
    assert outcomes["minikernel"] == outcomes["torch"]
    assert outcomes["torch"][0] == "raised"


@pytest.mark.exercise("4.2")
def test_with_kwargs_hooks_see_and_replace_keyword_arguments():
    seen = {}
    for fw in FRAMEWORKS:
        module, events = CLASSES[fw.name].Shift(), []

        def pre(m, args, kwargs, events=events):
            events.append(("pre", summary(args), summary(kwargs)))
            return args, {"by": kwargs["by"] * 10}

        def fwd(m, args, kwargs, output, events=events):
            events.append(("fwd", summary(args), summary(kwargs), summary(output)))

        module.register_forward_pre_hook(pre, with_kwargs=True)
        module.register_forward_hook(fwd, with_kwargs=True)
        module.register_forward_hook(lambda m, args, output, events=events: events.append(("plain", summary(args))))
        seen[fw.name] = (events, summary(module(_input(2, fw), by=0.5)))
    same(seen["minikernel"], seen["torch"])
    assert seen["torch"][0][1][2] == (("by", 5.0),)


@pytest.mark.exercise("4.2")
def test_a_module_used_twice_runs_its_hooks_at_each_use():
    hooks = [HookSpec("pre", 1, "scale", tag=0), HookSpec("fwd", 1, "scale", tag=1)]
    for spec in [("shared", 0, "double"), ("twice", "tanh"), ("chain", [("shared", 0, "double"), "tanh",
                                                                       ("shared", 0, "double")])]:
        seen = _run(("chain", [spec, spec]) if spec[0] == "shared" else spec, hooks, seed=3)
        same(seen["minikernel"], seen["torch"])
        assert len(seen["torch"][0]) >= 4


@pytest.mark.exercise("4.2")
def test_a_hook_registered_during_a_call_runs_from_the_next_call_on():
    seen = {}
    for fw in FRAMEWORKS:
        module, events = CLASSES[fw.name].Double(), []

        def late_pre(m, args, events=events):
            events.append("late pre")

        def late_fwd(m, args, out, events=events):
            events.append("late fwd")

        def pre(m, args, events=events):
            events.append("pre")
            if len(events) == 1:  # first call only
                m.register_forward_pre_hook(late_pre)
                m.register_forward_hook(late_fwd)

        module.register_forward_pre_hook(pre)
        module(_input(0, fw))
        events.append("--")
        module(_input(0, fw))
        seen[fw.name] = events
    assert seen["minikernel"] == seen["torch"] == ["pre", "late fwd", "--", "pre", "late pre", "late fwd"]


@pytest.mark.exercise("4.2")
def test_tuple_outputs_and_non_tensor_arguments_reach_the_hooks():
    seen = {}
    for fw in FRAMEWORKS:
        module, events = CLASSES[fw.name].Pair(), []
        module.register_forward_pre_hook(lambda m, args: events.append(("pre", summary(args))))
        module.register_forward_hook(lambda m, args, out: events.append(("fwd", summary(args), summary(out))))
        module.register_forward_hook(lambda m, args, out: (out[1], out[0]))  # swap the outputs
        seen[fw.name] = (events, summary(module(_input(0, fw), 3.0, scale=2.0)))
    same(seen["minikernel"], seen["torch"])


def test_without_hooks_a_call_is_just_forward():
    for fw in (MK, TORCH):
        module = CLASSES[fw.name].Double()
        assert np.allclose(summary(module(_input(1, fw)))[1], (_input(1, TORCH) * 2).numpy())
