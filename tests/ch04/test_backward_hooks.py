"""Exercise 4.3: full backward hooks and backward pre-hooks, built on an identity Function.

The same model in torch and in minikernel, the same recording hooks, one backward
pass: the hooks must fire in the same order with the same grad_input/grad_output,
their replacements must change the same gradients, and the leaves must end with
the same .grad. The hooks are set up during the forward call (before any
backward), which is where the minikernel side first reaches exercise 4.3.
"""
from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, strategies as st

from tests.ch04.twins import (CLASSES, FRAMEWORKS, WIDTH, HookSpec, build, hook_specs, make_weights, names,
                              no_global_hooks, outcome, register, same, specs, summary)
from tests.ch04.torch_hook_warning import torch_warns_when_no_input_needs_grad


def _input(seed: int, fw, requires_grad: bool):
    x = torch.randn(2, WIDTH, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    return fw.tensor(x, requires_grad)


def _forward_backward(spec, hooks, seed, x_requires_grad, calls=1):
    """{framework: (events, output, x.grad, parameter grads, warnings)} after forward + backward."""
    weights = make_weights(spec, seed)
    seen = {}
    with no_global_hooks(), torch_warns_when_no_input_needs_grad():
        for fw in FRAMEWORKS:  # MK first
            model = build(spec, fw, weights)
            modules, events = list(model.modules()), []
            for h in hooks:
                register(h, fw, modules, events, names(model))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                results = []
                for _ in range(calls):
                    x = _input(seed, fw, x_requires_grad)
                    out = model(x)
                    if out.requires_grad:
                        results.append(outcome(fw.sum(fw.mul(out, out)).backward))
                    events.append("-- backward done --")
            grads = [(n, summary(p.grad)) for n, p in model.named_parameters()]
            seen[fw.name] = (events, summary(out), [r[0] for r in results], summary(x.grad), grads,
                             [str(w.message) for w in caught])
    return seen


@pytest.mark.exercise("4.3")
@given(spec=specs(), hooks=hook_specs(("bw", "bwpre")).filter(bool), seed=st.integers(0, 3),
       x_requires_grad=st.booleans())
def test_backward_hooks_fire_like_torchs(spec, hooks, seed, x_requires_grad):
    seen = _forward_backward(spec, hooks, seed, x_requires_grad, calls=2)
    same(seen["minikernel"], seen["torch"])


@pytest.mark.exercise("4.3")
def test_grad_input_is_the_modules_input_gradient_not_the_parameters():
    hooks = [HookSpec("bw", 0, tag=0), HookSpec("bwpre", 0, tag=1)]
    seen = _forward_backward(("dense", 0), hooks, seed=0, x_requires_grad=True)
    same(seen["minikernel"], seen["torch"])
    events = seen["torch"][0]
    assert [e if isinstance(e, str) else e[0] for e in events] == ["bwpre", "bw", "-- backward done --"]
    grad_input = events[1][3]
    assert len(grad_input) == 1 and grad_input[0][1].shape == (2, WIDTH)  # d loss / d x only


@pytest.mark.exercise("4.3")
def test_replacing_grad_input_and_grad_output_changes_the_gradients_downstream():
    spec = ("chain", [("dense", 0), "tanh", ("dense", 1)])
    plain = _forward_backward(spec, [HookSpec("bw", 2, tag=0)], seed=1, x_requires_grad=True)
    hooks = [HookSpec("bw", 2, "scale", tag=0), HookSpec("bwpre", 3, "scale", tag=1)]
    scaled = _forward_backward(spec, hooks, seed=1, x_requires_grad=True)
    same(scaled["minikernel"], scaled["torch"])
    # tanh's grad_input doubled and the last layer's grad_output tripled: x.grad is 6x
    assert (scaled["torch"][3][1] / plain["torch"][3][1]).round(6).tolist() == [[6.0] * WIDTH] * 2


@pytest.mark.exercise("4.3")
def test_inputs_that_need_no_grad_get_zeros_and_non_tensors_get_none():
    seen = {}
    for fw in FRAMEWORKS:
        module, events = CLASSES[fw.name].Pair(), []
        module.register_full_backward_hook(lambda m, gin, gout: events.append((summary(gin), summary(gout))))
        x, y = _input(0, fw, True), _input(1, fw, False)
        a, b = module(x, y, 3.0)
        fw.sum(a).backward()  # b unused: its grad_output is None
        c, d = module(y, x, scale=2.0)
        fw.sum(fw.add(c, d)).backward()
        seen[fw.name] = (events, summary(x.grad))
    same(seen["minikernel"], seen["torch"])


@pytest.mark.exercise("4.3")
def test_no_input_needs_grad_the_hook_fires_at_the_outputs_with_a_warning():
    seen = {}
    for fw in FRAMEWORKS:
        model, events = build(("dense", 0), fw, make_weights(("dense", 0), 0)), []
        model.register_full_backward_hook(lambda m, gin, gout: events.append((summary(gin), summary(gout))))
        with warnings.catch_warnings(record=True) as caught, torch_warns_when_no_input_needs_grad():
            warnings.simplefilter("always")
            fw.sum(model(_input(0, fw, False))).backward()
        seen[fw.name] = (events, [str(w.message) for w in caught], summary(model.weight.grad))
        model.register_full_backward_hook(lambda m, gin, gout: (gout[0],))  # may only return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            seen[fw.name] += (outcome(fw.sum(model(_input(0, fw, False))).backward),)
    same(seen["minikernel"], seen["torch"])
    assert seen["torch"][3][0] == "raised"


@pytest.mark.exercise("4.3")
@pytest.mark.parametrize("kind", ["bw", "bwpre"])
def test_a_hook_returning_the_wrong_number_of_gradients_is_an_error(kind):
    seen = {}
    for fw in FRAMEWORKS:
        module = build(("dense", 0), fw, make_weights(("dense", 0), 0))
        if kind == "bw":
            module.register_full_backward_hook(lambda m, gin, gout: (gin[0], gin[0]))
        else:
            module.register_full_backward_pre_hook(lambda m, gout: (gout[0], None))
        seen[fw.name] = outcome(fw.sum(module(_input(0, fw, True))).backward)
    assert seen["minikernel"] == seen["torch"]
    assert seen["torch"][0] == "raised" and "invalid number" in seen["torch"][1][1]


@pytest.mark.exercise("4.3")
def test_full_and_deprecated_backward_hooks_side_by_side():
    """register_backward_hook (deprecated) hangs on the last node of the module's forward:
    its grad_input is that node's, not the module's. Same events and FutureWarnings as torch."""
    spec = ("chain", [("dense", 0), "tanh"])
    seen = {}
    for fw in FRAMEWORKS:
        model, events = build(spec, fw, make_weights(spec, 2)), []
        dense, tanh = model._modules["0"], model._modules["1"]
        dense.register_full_backward_hook(lambda m, gin, gout: events.append(("full", summary(gin), summary(gout))))
        dense.register_full_backward_hook(lambda m, gin, gout: None)
        tanh.register_backward_hook(lambda m, gin, gout: events.append(("old", summary(gin), summary(gout))))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fw.sum(model(_input(2, fw, True))).backward()
        seen[fw.name] = (events, [(w.category.__name__, str(w.message)) for w in caught])
        seen[fw.name] += (outcome(dense.register_backward_hook, lambda *a: None),
                          outcome(tanh.register_full_backward_hook, lambda *a: None))
    same(seen["minikernel"], seen["torch"])
    assert [e[0] for e in seen["torch"][0]] == ["old", "full"]


@pytest.mark.exercise("4.3")
def test_global_backward_hooks_run_before_the_modules_own():
    hooks = [HookSpec("bw", 0, tag=0), HookSpec("bw", None, tag=1), HookSpec("bwpre", 0, tag=2),
             HookSpec("bwpre", None, tag=3)]
    seen = _forward_backward(("chain", ["double", ("dense", 0)]), hooks, seed=3, x_requires_grad=True)
    same(seen["minikernel"], seen["torch"])
    # global then the module's, at each border; the root's input border is reached last
    assert [(e[0], e[1], e[2]) for e in seen["torch"][0][:-1]] == [
        ("bwpre", 3, "<root>"), ("bwpre", 2, "<root>"), ("bwpre", 3, "1"), ("bw", 1, "1"),
        ("bwpre", 3, "0"), ("bw", 1, "0"), ("bw", 1, "<root>"), ("bw", 0, "<root>")]
