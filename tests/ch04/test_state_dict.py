"""Exercise 4.5: state_dict and load_state_dict, key for key and error for error like torch.

Module trees with parameters (some None), persistent and non-persistent buffers
(some None), missing children and one submodule shared by two parents are built
twice, with register_parameter / register_buffer / add_module. The minikernel
side is asked first, so that in student mode 4.5's stub is the first reached.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from tests.ch04.twins import FRAMEWORKS, MK, outcome, plain, same, summary
from tests.torch_versions import torch_before

NAMES = ["weight", "bias", "scale", "fc", "body", "head", "0", "1"]


def node_class(fw):
    class Node(fw.nn.Module):
        def __init__(self, params, buffers, children):
            super().__init__()
            for name, value in params:
                self.register_parameter(name, value)
            for name, value, persistent in buffers:
                self.register_buffer(name, value, persistent)
            for name, child in children:
                self.add_module(name, child)
    return Node


NODE = {fw.name: node_class(fw) for fw in FRAMEWORKS}


@st.composite
def trees(draw, depth: int = 0):
    """A nested description: {"params": [(name, shape|None)], "buffers": [(name, shape|None, persistent)],
    "children": [(name, tree | None | "shared")]}; names are unique per node."""
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=5))
    shape = st.one_of(st.none(), st.lists(st.integers(1, 3), max_size=2).map(tuple))
    tree = {"params": [], "buffers": [], "children": []}
    for name in names:
        kind = draw(st.sampled_from(["param", "buffer", "child"] if depth < 2 else ["param", "buffer"]))
        if kind == "param":
            tree["params"].append((name, draw(shape)))
        elif kind == "buffer":
            tree["buffers"].append((name, draw(shape), draw(st.booleans())))
        else:
            tree["children"].append((name, draw(st.one_of(st.none(), st.just("shared"), trees(depth + 1)))))
    return tree


def build_tree(tree, fw, gen, shared):
    def value(shape):
        return None if shape is None else torch.randn(shape, dtype=torch.float64, generator=gen)
    params = [(n, None if value(s) is None else fw.param(torch.randn(s, dtype=torch.float64, generator=gen)))
              for n, s in tree["params"]]
    buffers = [(n, None if s is None else fw.tensor(value(s)), p) for n, s, p in tree["buffers"]]
    children = []
    for name, child in tree["children"]:
        if child == "shared":
            if "module" not in shared:
                shared["module"] = NODE[fw.name]([("weight", fw.param(torch.ones(2, dtype=torch.float64)))],
                                                 [("count", fw.tensor(torch.zeros(1, dtype=torch.float64)), True)],
                                                 [])
            children.append((name, shared["module"]))
        else:
            children.append((name, None if child is None else build_tree(child, fw, gen, shared)))
    return NODE[fw.name](params, buffers, children)


def twins(tree, seed: int):
    """The same tree in minikernel and torch (minikernel first), with the same numbers."""
    return [build_tree(tree, fw, torch.Generator().manual_seed(seed), {}) for fw in FRAMEWORKS]


def _entries(state: dict):
    return [(k, summary(v)) for k, v in state.items()]


@pytest.mark.exercise("4.5")
@given(tree=trees(), seed=st.integers(0, 3))
def test_state_dict_has_torchs_keys_values_and_metadata(tree, seed):
    mk_model, torch_model = twins(tree, seed)
    mk_state, torch_state = mk_model.state_dict(), torch_model.state_dict()
    same(_entries(mk_state), _entries(torch_state))
    assert list(mk_state._metadata.items()) == list(torch_state._metadata.items())
    for name, value in mk_state.items():
        assert not value.requires_grad  # detached ...
        own = dict(mk_model.named_parameters(remove_duplicate=False)) | dict(
            mk_model.named_buffers(remove_duplicate=False))
        assert value.data_ptr() == own[name].data_ptr()  # ... but the same memory
    kept_mk, kept_torch = mk_model.state_dict(keep_vars=True), torch_model.state_dict(keep_vars=True)
    assert [type(v).__name__ for v in kept_mk.values()] == [type(v).__name__ for v in kept_torch.values()]
    assert [v.requires_grad for v in kept_mk.values()] == [v.requires_grad for v in kept_torch.values()]


@pytest.mark.exercise("4.5")
def test_state_dict_into_a_given_destination_with_a_prefix():
    tree = {"params": [("weight", (2,))], "buffers": [("mask", (2,), False), ("count", (1,), True)],
            "children": [("fc", {"params": [("bias", (1,))], "buffers": [], "children": []})]}
    mk_model, torch_model = twins(tree, 0)
    given_mk, given_torch = {"kept": 1}, {"kept": 1}
    out_mk = mk_model.state_dict(destination=given_mk, prefix="model.")
    out_torch = torch_model.state_dict(destination=given_torch, prefix="model.")
    assert out_mk is given_mk and out_torch is given_torch
    assert list(out_mk) == list(out_torch) == ["kept", "model.weight", "model.count", "model.fc.bias"]


@st.composite
def damage(draw, keys: list[str]):
    """What to do to a state dict: drop keys, add keys, change shapes, put in a non-tensor."""
    dropped = draw(st.lists(st.sampled_from(keys), unique=True, max_size=2)) if keys else []
    extra_roots = [k.rsplit(".", 1)[0] + "." for k in keys if "." in k] + [""]
    added = draw(st.lists(st.tuples(st.sampled_from(extra_roots), st.sampled_from(["bogus", "nochild.weight",
                                                                                  "weight"])), max_size=2))
    reshaped = draw(st.lists(st.sampled_from(keys), unique=True, max_size=1)) if keys else []
    not_tensor = draw(st.lists(st.sampled_from(keys), unique=True, max_size=1)) if keys else []
    return dropped, [a + b for a, b in added], reshaped, not_tensor, draw(st.booleans())


def _reshaped(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that differs: one more dimension of 2. Into a 0-d entry, torch before 2.11 loads
    any 1-d value (its first element), where the docstring's rule (torch's from 2.11 on) loads a
    one-element one only: there the value is (2, 1), which every release refuses."""
    return (2, 1) if len(shape) == 0 and torch_before("2.11") else (*shape, 2)


@pytest.mark.exercise("4.5")
@given(tree=trees(), data=st.data())
def test_load_state_dict_copies_and_reports_like_torch(tree, data):
    mk_model, torch_model = twins(tree, 0)
    mk_model.state_dict()  # exercise 4.5 first
    source = twins(tree, 1)[1].state_dict()  # other values, same layout
    dropped, added, reshaped, not_tensor, strict = data.draw(damage(list(source)))
    state = OrderedDict((k, v) for k, v in source.items() if k not in dropped)
    for k in added:
        state.setdefault(k, torch.zeros(1, dtype=torch.float64))
    for k in reshaped:
        if k in state:
            state[k] = torch.zeros(*_reshaped(state[k].shape), dtype=torch.float64)
    for k in not_tensor:
        if k in state:
            state[k] = 3
    mk_state = OrderedDict((k, MK.tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in state.items())
    got = outcome(mk_model.load_state_dict, mk_state, strict=strict)
    expected = outcome(torch_model.load_state_dict, state, strict=strict)
    if expected[0] == "raised":
        assert got[0] == "raised" and got[1][0] == expected[1][0]
        assert plain(got[1][1]) == expected[1][1]
    else:
        assert got[0] == "ok", got
        assert (got[1].missing_keys, got[1].unexpected_keys) == (expected[1].missing_keys, expected[1].unexpected_keys)
        assert repr(got[1]) == repr(expected[1])
    same(_entries(mk_model.state_dict()), _entries(torch_model.state_dict()))


@pytest.mark.exercise("4.5")
def test_loading_copies_in_place_and_the_messages_name_every_key():
    tree = {"params": [("weight", (2, 2))], "buffers": [("count", (1,), True), ("mask", (2,), False)],
            "children": [("head", {"params": [("bias", (2,))], "buffers": [], "children": []})]}
    mk_model, torch_model = twins(tree, 0)
    weight = mk_model.weight
    mk_model.load_state_dict(OrderedDict((k, MK.tensor(v)) for k, v in twins(tree, 5)[1].state_dict().items()))
    assert mk_model.weight is weight and np.array_equal(weight.to_numpy(), twins(tree, 5)[1].weight.detach().numpy())
    bad = {"weight": torch.zeros(3, dtype=torch.float64), "head.bias": torch.zeros(2, dtype=torch.float64),
           "head.extra": torch.zeros(1, dtype=torch.float64), "other.x": torch.zeros(1, dtype=torch.float64)}
    got = outcome(mk_model.load_state_dict, {k: MK.tensor(v) for k, v in bad.items()})
    expected = outcome(torch_model.load_state_dict, bad)
    assert got[0] == expected[0] == "raised"
    assert plain(got[1][1]) == expected[1][1]
    assert 'Missing key(s) in state_dict: "count".' in expected[1][1]
    assert 'Unexpected key(s) in state_dict: "other.x", "head.extra".' in expected[1][1]  # root's first
    assert "size mismatch for weight" in expected[1][1]
    assert outcome(mk_model.load_state_dict, [1, 2]) == ("raised", ("TypeError", plain(
        "Expected state_dict to be dict-like, got <class 'list'>.")))
    assert repr(mk_model.load_state_dict(mk_model.state_dict())) == repr(
        torch_model.load_state_dict(torch_model.state_dict())) == "<All keys matched successfully>"
