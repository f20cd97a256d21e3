"""``load_state_dict``'s pre-hooks (public and ``with_module=False``) and post-hooks, each
run through torch and minikernel on the same two-level model: the calls they receive,
in order, and what their edits do to the load."""
from __future__ import annotations

import gc

import pytest
import torch

import minikernel as mk


def _model(lib):
    return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Sequential(lib.nn.Linear(3, 1)))


def _plain(value):
    """A hook argument as comparable data (tensors by their values)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def _record_hooks(lib, model, calls):
    def pre(module, state_dict, prefix, metadata, strict, missing, unexpected, errors):
        calls.append(("pre", type(module).__name__, _plain(dict(state_dict)), prefix, dict(metadata), strict,
                      list(missing), list(unexpected), list(errors)))

    def pre_without_module(state_dict, prefix, metadata, strict, missing, unexpected, errors):
        calls.append(("pre-", prefix, sorted(state_dict)))

    def post(module, incompatible):
        calls.append(("post", type(module).__name__, list(incompatible.missing_keys),
                      list(incompatible.unexpected_keys)))

    for module in (model, model[0], model[1], model[1][0]):
        module.register_load_state_dict_pre_hook(pre)
        module._register_load_state_dict_pre_hook(pre_without_module)
        module.register_load_state_dict_post_hook(post)


def _state(lib, saved):
    return {k: lib.tensor(v) for k, v in saved.items()}


SAVED = {"0.weight": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "0.bias": [0.5, 0.25, 0.125],
         "1.0.weight": [[7.0, 8.0, 9.0]], "1.0.bias": [-1.0]}


@pytest.mark.exercise("4.5")
@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("keys", ["all", "one missing, one extra"])
def test_load_state_dict_hooks_receive_torchs_arguments(strict, keys):
    saved = dict(SAVED)
    if keys != "all":
        saved.pop("1.0.bias")
        saved["1.extra"] = [0.0]
    outcomes = []
    for lib in (torch, mk):
        model, calls = _model(lib), []
        _record_hooks(lib, model, calls)
        try:
            result = model.load_state_dict(_state(lib, saved), strict=strict)
            outcome = (list(result.missing_keys), list(result.unexpected_keys))
        except RuntimeError as err:
            outcome = type(err).__name__
        outcomes.append((calls, outcome))
    assert outcomes[1] == outcomes[0]


@pytest.mark.exercise("4.5")
def test_a_pre_hook_renaming_keys_changes_what_loads_like_torch():
    renamed = {k.replace("weight", "old_weight"): v for k, v in SAVED.items()}

    def rename(module, state_dict, prefix, *rest):
        for key in [k for k in state_dict if k.startswith(prefix) and "old_weight" in k[len(prefix):]
                    and "." not in k[len(prefix):]]:
            state_dict[key.replace("old_weight", "weight")] = state_dict.pop(key)

    loaded = []
    for lib in (torch, mk):
        model = _model(lib)
        model[0].register_load_state_dict_pre_hook(rename)
        model[1][0].register_load_state_dict_pre_hook(rename)
        model.load_state_dict(_state(lib, renamed))
        loaded.append([p.tolist() for p in model.parameters()])
    assert loaded[1] == loaded[0]


@pytest.mark.exercise("4.4")
def test_a_pre_hook_handle_removes_it_and_the_module_is_held_weakly():
    for lib in (torch, mk):
        model, calls = _model(lib), []
        handle = model.register_load_state_dict_pre_hook(lambda *args, calls=calls: calls.append(args[2]))
        handle.remove()
        model.load_state_dict(model.state_dict())
        assert calls == [], lib.__name__
        layer = lib.nn.Linear(1, 1)
        hook = layer._load_state_dict_pre_hooks[layer.register_load_state_dict_pre_hook(lambda *a: None).id]
        del layer
        gc.collect()
        with pytest.raises(RuntimeError, match="dead Module"):
            hook({}, "", {}, True, [], [], [])
