"""Exercise 4.2 at its edge: hooks that remove or add hooks while the module runs.

torch's ``_call_impl`` loops over a list of ``(hook_id, hook)`` pairs made when each loop
starts, so in the call that is running a removed hook still fires and an added one does not;
the next call sees the change. A loop over the dicts themselves raises ("mutated during
iteration"); a loop over the ids that looks each hook up again skips, or fails on, a hook
removed meanwhile.

The hooks change the dicts directly (``del module._forward_hooks[hook_id]``, which is what
``handle.remove()`` does to them), so that these tests need exercise 4.2 only, not 4.4.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st

from tests.ch04.twins import CLASSES, FRAMEWORKS, WIDTH, no_global_hooks, same

KINDS = ("pre", "fwd", "global pre", "global fwd")

#: one step of a plan: (kind of the hook registered, index of a hook it removes or None, kind it adds or None)
steps = st.tuples(st.sampled_from(KINDS), st.one_of(st.none(), st.integers(0, 5)),
                  st.one_of(st.none(), st.sampled_from(KINDS)))


def _dict_of(fw, module, kind: str):
    where = fw.hooks if kind.startswith("global") else module
    prefix = "_global" if kind.startswith("global") else ""
    return getattr(where, f"{prefix}_forward_pre_hooks" if kind.endswith("pre") else f"{prefix}_forward_hooks")


def _file(fw, module, kind: str, hook) -> int:
    """Register ``hook`` the public way; return its id (the key it is filed under)."""
    dicts = _dict_of(fw, module, kind)
    before = set(dicts)
    if kind == "pre":
        module.register_forward_pre_hook(hook)
    elif kind == "fwd":
        module.register_forward_hook(hook)
    elif kind == "global pre":
        fw.hooks.register_module_forward_pre_hook(hook)
    else:
        fw.hooks.register_module_forward_hook(hook)
    (hook_id,) = set(dicts) - before
    return hook_id


def _run(fw, plan) -> list:
    """Register one hook per step of ``plan``, call the module twice, return what fired."""
    module, events, filed = CLASSES[fw.name].Double(), [], []

    def make(tag: int, removes, adds):
        def hook(*args):
            events.append(tag)
            if removes is not None and removes < len(filed):
                kind, hook_id = filed[removes]
                _dict_of(fw, module, kind).pop(hook_id, None)
            if adds is not None:
                filed.append((adds, _file(fw, module, adds, lambda *a: events.append(f"added by {tag}"))))
        return hook

    for tag, (kind, removes, adds) in enumerate(plan):
        filed.append((kind, _file(fw, module, kind, make(tag, removes, adds))))
    x = fw.tensor(torch.linspace(-1, 1, WIDTH, dtype=torch.float64))
    for call in range(2):
        try:
            module(x)
        except NotImplementedError:  # the stub: the exercise is not written
            raise
        except Exception as err:  # noqa: BLE001 - an error is an outcome to compare
            events.append(f"raised {type(err).__name__}")
        events.append(f"-- call {call} done --")
    return events


@pytest.mark.exercise("4.2")
@settings(max_examples=60, deadline=None)
@given(plan=st.lists(steps, min_size=1, max_size=6))
def test_hooks_removed_or_added_during_a_call_change_the_next_call_only(plan):
    with no_global_hooks():
        seen = {fw.name: _run(fw, plan) for fw in FRAMEWORKS}
    same(seen["minikernel"], seen["torch"])


@pytest.mark.exercise("4.2")
@pytest.mark.parametrize("kind", KINDS)
def test_a_hook_that_removes_itself_and_the_next_one(kind):
    """The case a learner meets first: a hook that fires once, and a second removed from inside the first."""
    # the first removes itself; the second removes the third (still due in this call) and adds a hook
    # (due in the next call only); the third removes the second
    plan = [(kind, 0, None), (kind, 2, kind), (kind, 1, None)]
    with no_global_hooks():
        seen = {fw.name: _run(fw, plan) for fw in FRAMEWORKS}
    assert "raised RuntimeError" not in seen["torch"]
    same(seen["minikernel"], seen["torch"])
