"""Exercise 4.3 edge cases: gradients that reach a module's inputs without passing its outputs, and what
the hooks' state keeps after a backward.

A forward that hands its (hooked) input out some other way than through its result
(here: into a list) lets a backward reach the inputs' node while the outputs' node
never ran: ``grad_outputs`` is None, and torch calls no full backward hook. After a
backward that went through the outputs, ``grad_outputs`` is reset, so a later
backward through that side path calls no hook either. With no input requiring grad,
the hook fires at the outputs and the gradients it saw are not kept alive by the
module's hook state afterwards, and the warning it gives points outside the hook's
own code (``stacklevel=5``; torch's points at the line that called ``backward()``).
"""
from __future__ import annotations

import gc
import inspect
import warnings
import weakref
from pathlib import Path

import pytest

from tests.ch04.test_backward_hooks import _input
from tests.ch04.torch_hook_warning import torch_warns_when_no_input_needs_grad
from tests.ch04.twins import FRAMEWORKS, build, make_weights, no_global_hooks, same, summary


def _stash_module(fw, stash: list):
    class Stash(fw.nn.Module):
        def forward(self, x):
            stash.append(x)  # the hooked input, handed out past the module's output
            return fw.tanh(fw.mul(x, 2.0))
    return Stash()


@pytest.mark.exercise("4.3")
def test_a_gradient_that_bypasses_the_outputs_calls_no_hook():
    seen = {}
    with no_global_hooks():
        for fw in FRAMEWORKS:
            stash, events = [], []
            module = _stash_module(fw, stash)
            module.register_full_backward_hook(lambda m, gin, gout, events=events: events.append(
                ("bw", summary(gin), summary(gout))))
            x = _input(0, fw, True)
            out = module(x)
            for name, root in [("side path", stash[0]), ("output", out), ("side path again", stash[0])]:
                fw.sum(root).backward(retain_graph=True)
                events.append((f"-- backward through the {name} done --", summary(x.grad)))
            seen[fw.name] = events
    same(seen["minikernel"], seen["torch"])


def _no_input_grad_backward(fw):
    """A dense module whose input needs no grad; returns (weak refs to the grad_outputs the hook saw,
    warnings caught, the output kept alive)."""
    model = build(("dense", 0), fw, make_weights(("dense", 0), 0))
    refs = []
    model.register_full_backward_hook(lambda m, gin, gout: refs.extend(weakref.ref(g) for g in gout))
    out = model(_input(0, fw, False))
    with warnings.catch_warnings(record=True) as caught, torch_warns_when_no_input_needs_grad():
        warnings.simplefilter("always")
        fw.sum(fw.mul(out, out)).backward()
    gc.collect()
    return refs, caught, out


@pytest.mark.exercise("4.3")
def test_no_input_grad_the_hook_state_lets_go_of_the_gradients():
    alive = {}
    with no_global_hooks():
        for fw in FRAMEWORKS:
            refs, _, out = _no_input_grad_backward(fw)
            assert refs, f"{fw.name}: the full backward hook did not fire"
            alive[fw.name] = [r() is not None for r in refs]
            del out
    assert alive["minikernel"] == alive["torch"], (
        "after the hooks ran, torch's module keeps no reference to the grad_outputs (bw_hook.grad_outputs = None: "
        f"they belong to that backward only); alive afterwards: yours {alive['minikernel']}, torch's {alive['torch']}")


@pytest.mark.exercise("4.3")
def test_no_input_grad_warning_points_outside_the_hook():
    with no_global_hooks():
        for fw in FRAMEWORKS:
            _, caught, _ = _no_input_grad_backward(fw)
            files = [Path(w.filename).resolve() for w in caught if "no inputs require gradients" in str(w.message)]
            assert files, f"{fw.name}: no warning that no input requires gradients"
            if fw.name == "torch":
                assert files == [Path(__file__).resolve()]
            else:
                api = Path(inspect.getsourcefile(fw.nn.Module)).parents[1] / "autograd" / "api.py"
                assert all(f in (Path(__file__).resolve(), api.resolve()) for f in files), (
                    f"the warning is attributed to {files}: warn with stacklevel=5, which points past the hook and "
                    "the engine (torch's points at the line that called backward(); minikernel's at its backward())")

