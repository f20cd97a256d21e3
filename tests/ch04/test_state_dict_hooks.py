"""Module state-dict hooks against torch: ``register_state_dict_pre_hook`` and
``register_load_state_dict_post_hook`` (cases from torch's test_module_hooks)."""
from __future__ import annotations

import pytest
import torch

from tests.ch04.test_state_dict import NODE
from tests.ch04.twins import FRAMEWORKS
from tests.torch_versions import torch_before

pytestmark = pytest.mark.exercise("4.5")


def tree(fw):
    """root(w) -> a(b) -> leaf(v), and root -> c(u): the same tree for both frameworks."""
    Node = NODE[fw.name]
    t = torch.arange(3.0)
    leaf = Node([("v", fw.param(t))], [], [])
    a = Node([], [("b", fw.tensor(t), True)], [("leaf", leaf)])
    c = Node([("u", fw.param(t[:2]))], [], [])
    return Node([("w", fw.param(t))], [], [("a", a), ("c", c)])


def _names(root):
    return {id(m): name or "root" for name, m in root.named_modules()}


def test_state_dict_pre_hooks_run_per_module_with_prefix_and_keep_vars():
    seen = {}
    for fw in FRAMEWORKS:
        root, calls = tree(fw), []
        names = _names(root)
        for _, m in root.named_modules():
            m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(
                (names[id(mod)], prefix, keep_vars)))
        root.state_dict(keep_vars=True)
        root.state_dict(prefix="top.")
        seen[fw.name] = calls
    assert seen["minikernel"] == seen["torch"]


def test_state_dict_pre_hook_handle_removes_it():
    for fw in FRAMEWORKS:
        root, calls = tree(fw), []
        handle = root.register_state_dict_pre_hook(lambda *args: calls.append(1))
        root.state_dict()
        handle.remove()
        root.state_dict()
        assert calls == [1], fw.name


def _load(fw, drop: str, clear_in: str | None, strict: bool):
    root = tree(fw)
    names, calls = _names(root), []
    state = {k: v for k, v in root.state_dict().items() if k != drop}
    state["extra.key"] = state["w"]

    def hook(mod, keys):
        calls.append((names[id(mod)], list(keys.missing_keys), list(keys.unexpected_keys)))
        if names[id(mod)] == clear_in:
            keys.missing_keys.clear()
            keys.unexpected_keys.clear()

    for _, m in root.named_modules():
        m.register_load_state_dict_post_hook(hook)
    try:
        result = root.load_state_dict(state, strict=strict)
        outcome = ("ok", list(result.missing_keys), list(result.unexpected_keys))
    except RuntimeError as err:
        outcome = ("error", str(err).splitlines()[1:])
    return calls, outcome


@pytest.mark.parametrize("clear_in, strict", [(None, False), (None, True), ("root", True), ("a", True)])
def test_load_post_hooks_see_and_may_edit_the_incompatible_keys(clear_in, strict):
    mine = _load(FRAMEWORKS[0], "a.leaf.v", clear_in, strict)
    theirs = _load(FRAMEWORKS[1], "a.leaf.v", clear_in, strict)
    assert mine == theirs


def test_load_post_hook_must_not_return_a_value():
    for fw in FRAMEWORKS:
        root = tree(fw)
        root.register_load_state_dict_post_hook(lambda mod, keys: keys)
        # torch before 2.13 runs two of the words together ("are notexpected"); minikernel says 2.13's
        words = "notexpected" if fw.name == "torch" and torch_before("2.13") else "not expected"
        with pytest.raises(AssertionError, match=f"are {words} to return new values"):
            root.load_state_dict(root.state_dict())
