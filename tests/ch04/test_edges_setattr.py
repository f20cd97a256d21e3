"""Exercise 4.1 edge cases: every kind of value assigned over every kind of name, the value itself kept.

test_registration.py compares where names live and the *kind* of value they hold; an
assignment that leaves the old tensor or submodule in place (a buffer replaced by
another tensor, a submodule replaced by None) keeps the kinds equal. Here each of
the 5 x 6 cases also checks that the module holds the very object assigned, in the
dict torch puts it in, with the persistence torch gives it.
"""
from __future__ import annotations

import pytest
import torch

from tests.ch04.test_registration import KINDS, _comparable, _state, _value
from tests.ch04.twins import CLASSES, FRAMEWORKS, outcome

BEFORE = ["nothing", "param", "buffer", "non-persistent buffer", "module", "attribute"]


def _prepare(module, before, fw):
    if before == "param":
        module.register_parameter("x", fw.param(torch.full((2,), 3.0)))
    elif before in ("buffer", "non-persistent buffer"):
        module.register_buffer("x", fw.tensor(torch.full((2,), 4.0)), persistent=before == "buffer")
    elif before == "module":
        module.add_module("x", CLASSES[fw.name].Tanh())
    elif before == "attribute":
        module.x = "plain"


def _where(module, value) -> tuple:
    """Which of the module's places hold exactly ``value`` under "x", and what reading it gives."""
    places = [("_parameters", module._parameters), ("_buffers", module._buffers), ("_modules", module._modules),
              ("__dict__", vars(module))]
    held = [place for place, d in places if "x" in d and d["x"] is value]
    read = getattr(module, "x", "missing")
    return held, "x" in module._non_persistent_buffers_set, read is value


@pytest.mark.exercise("4.1")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("before", BEFORE)
def test_an_assignment_stores_the_value_itself(before, kind):
    results = {}
    for fw in FRAMEWORKS:
        module = fw.nn.Module()
        _prepare(module, before, fw)
        value = _value(kind, fw)
        done = _comparable(outcome(setattr, module, "x", value))
        results[fw.name] = (done, _state(module), _where(module, value) if done[0] == "ok" else None)
    mine, theirs = results["minikernel"], results["torch"]
    assert mine[0] == theirs[0], f"x was a {before}; assigning a {kind}: torch {theirs[0]}, yours {mine[0]}"
    assert mine[1] == theirs[1], f"x was a {before}; after assigning a {kind}: torch's module {theirs[1]}, yours {mine[1]}"
    assert mine[2] == theirs[2], (
        f"x was a {before}; after assigning a {kind}, (the places holding that very value, non-persistent, "
        f"module.x is the value) are {mine[2]} in yours, {theirs[2]} in torch's")
