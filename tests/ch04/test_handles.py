"""Exercise 4.4: removing hooks through their handles, before and during a call.

Every test removes a hook before anything else, so that in student mode it first
reaches exercise 4.4; the calls afterwards need 4.2 (and 4.3 for backward hooks).
"""
from __future__ import annotations

import gc
import weakref

import pytest
import torch
from hypothesis import given, strategies as st

from tests.ch04.twins import (CLASSES, FRAMEWORKS, WIDTH, HookSpec, build, make_hook, make_weights, names,
                              no_global_hooks, register, same, specs, summary)


def _input(fw, requires_grad=False):
    x = torch.linspace(-1, 1, 2 * WIDTH, dtype=torch.float64).reshape(2, WIDTH)
    return fw.tensor(x, requires_grad)


def _flag_sizes(module) -> tuple[int, ...]:
    return (len(module._forward_pre_hooks), len(module._forward_pre_hooks_with_kwargs), len(module._forward_hooks),
            len(module._forward_hooks_with_kwargs), len(module._forward_hooks_always_called))


@pytest.mark.exercise("4.4")
@given(spec=specs(max_leaves=4),
       hooks=st.lists(st.builds(HookSpec, kind=st.sampled_from(["pre", "fwd"]),
                                target=st.one_of(st.none(), st.integers(0, 9)), with_kwargs=st.booleans(),
                                always_call=st.booleans(), prepend=st.booleans()), min_size=1, max_size=6),
       removed=st.lists(st.integers(0, 5), min_size=1, max_size=4), again=st.booleans())
def test_removed_hooks_never_fire_and_leave_no_flags(spec, hooks, removed, again):
    hooks = [HookSpec(**{**h.__dict__, "tag": i, "with_kwargs": h.with_kwargs and h.target is not None})
             for i, h in enumerate(hooks)]
    seen = {}
    with no_global_hooks():
        for fw in FRAMEWORKS:
            model = build(spec, fw, make_weights(spec, 0))
            modules, events = list(model.modules()), []
            handles = [register(h, fw, modules, events, names(model)) for h in hooks]
            for i in removed:
                handles[i % len(handles)].remove()
                if again:
                    handles[i % len(handles)].remove()  # twice is fine
            out = model(_input(fw))
            seen[fw.name] = (events, summary(out), [_flag_sizes(m) for m in modules])
    same(seen["minikernel"], seen["torch"])
    fired = {e[1] for e in seen["torch"][0]}
    assert not fired & {i % len(hooks) for i in removed}


@pytest.mark.exercise("4.4")
@given(plan=st.lists(st.tuples(st.sampled_from(["pre", "fwd"]), st.integers(0, 2),
                               st.lists(st.integers(0, 7), max_size=3)), min_size=1, max_size=8))
def test_removing_hooks_during_a_call_affects_later_loops_not_the_running_one(plan):
    """A hook may remove itself or others while the model runs: torch's loops go over a list
    made when each loop starts, so a removed hook can still fire in a loop already running."""
    seen = {}
    spec = ("chain", ["double", ("twice", "tanh")])
    for fw in FRAMEWORKS:
        model = build(spec, fw, {})
        modules, events, handles = list(model.modules()), [], []
        throwaway = modules[0].register_forward_hook(lambda *a: events.append("never"))
        throwaway.remove()
        for tag, (kind, target, to_remove) in enumerate(plan):
            inner = make_hook(HookSpec(kind, target, tag=tag), fw, events, names(model))

            def hook(*args, inner=inner, to_remove=to_remove):
                result = inner(*args)
                for r in to_remove:
                    if r < len(handles):
                        handles[r].remove()
                return result

            target_module = modules[target % len(modules)]
            handles.append(target_module.register_forward_pre_hook(hook) if kind == "pre"
                           else target_module.register_forward_hook(hook))
        for _ in range(2):
            model(_input(fw))
            events.append("-- call done --")
        seen[fw.name] = events
    same(seen["minikernel"], seen["torch"])
    assert "never" not in seen["torch"]


@pytest.mark.exercise("4.4")
def test_a_handle_is_a_context_manager_and_keeps_no_module_alive():
    seen = {}
    for fw in FRAMEWORKS:
        module, events = CLASSES[fw.name].Double(), []
        with module.register_forward_hook(lambda m, a, o: events.append("inside")):
            module(_input(fw))
        module(_input(fw))
        handle = module.register_forward_pre_hook(lambda m, a: None, with_kwargs=False)
        alive = weakref.ref(module)
        del module
        gc.collect()
        handle.remove()  # the module is gone: nothing to remove, no error
        seen[fw.name] = (events, alive() is None)
    assert seen["minikernel"] == seen["torch"] == (["inside"], True)


@pytest.mark.exercise("4.4")
def test_flags_are_removed_even_when_the_hook_dict_no_longer_holds_the_hook():
    # module._forward_hooks.clear() (a common way to drop every hook) empties the hook
    # dict only; removing a handle afterwards still clears its flags, as in torch.
    seen = {}
    for fw in FRAMEWORKS:
        module = CLASSES[fw.name].Double()
        handles = [module.register_forward_hook(lambda m, a, kw, o: None, with_kwargs=True, always_call=True),
                   module.register_forward_pre_hook(lambda m, a, kw: None, with_kwargs=True)]
        module._forward_hooks.clear()
        module._forward_pre_hooks.clear()
        for handle in handles:
            handle.remove()
        seen[fw.name] = _flag_sizes(module)
    assert seen["minikernel"] == seen["torch"], (
        "(pre-hooks, pre-hooks with kwargs, hooks, hooks with kwargs, always-call hooks) after the hook dicts were "
        f"cleared and the handles removed: torch {seen['torch']}, yours {seen['minikernel']}")


@pytest.mark.exercise("4.4")
def test_global_hook_handles():
    seen = {}
    with no_global_hooks():
        for fw in FRAMEWORKS:
            events = []
            fw.hooks.register_module_forward_pre_hook(lambda m, a: events.append("never")).remove()
            pre = fw.hooks.register_module_forward_pre_hook(lambda m, a: events.append(("pre", type(m).__name__)))
            fwd = fw.hooks.register_module_forward_hook(lambda m, a, kw, o: events.append("fwd"), with_kwargs=True,
                                                         always_call=True)
            module = build(("chain", ["double"]), fw, {})
            module(_input(fw))
            pre.remove()
            module(_input(fw))
            fwd.remove()
            module(_input(fw))
            seen[fw.name] = (events, len(fw.hooks._global_forward_hooks_always_called),
                             len(fw.hooks._global_forward_hooks_with_kwargs))  # torch leaves this flag behind
    assert seen["minikernel"] == seen["torch"]
    assert seen["torch"][0] == [("pre", "Chain"), ("pre", "Double"), "fwd", "fwd", "fwd", "fwd"]


@pytest.mark.exercise("4.4")
def test_a_backward_hook_removed_after_forward_still_fires_in_that_backward():
    """The call copies the hooks it will use into its BackwardHook: removal only affects later calls."""
    seen = {}
    for fw in FRAMEWORKS:
        model, events = build(("dense", 0), fw, make_weights(("dense", 0), 1)), []
        handle = model.register_full_backward_hook(lambda m, gin, gout: events.append("bw"))
        pre = model.register_full_backward_pre_hook(lambda m, gout: events.append("bwpre"))
        pre.remove()
        out = model(_input(fw, True))
        handle.remove()
        fw.sum(out).backward()
        fw.sum(model(_input(fw, True))).backward()
        seen[fw.name] = events
    assert seen["minikernel"] == seen["torch"] == ["bw"]
