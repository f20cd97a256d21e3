"""The complete (non-exercise) parts of minikernel.nn against torch.nn: Parameter, the
register_* methods and their errors, lookup, traversal, repr, hook registration rules and
the functional ops. No exercise is needed here, so these pass in both modes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import minikernel as mk
import minikernel.nn as mknn
from minikernel.nn.module import typename
from tests.ch04.test_state_dict import NODE, build_tree
from tests.ch04.twins import CLASSES, FRAMEWORKS, MK, no_global_hooks, outcome, plain, same, summary


def test_parameter_is_a_leaf_that_requires_grad():
    data = torch.tensor([[1.0, 2.0]])
    mine, theirs = mknn.Parameter(MK.tensor(data)), torch.nn.Parameter(data.clone())
    assert repr(mine) == repr(theirs)
    assert (mine.requires_grad, mine.is_leaf, mine.grad_fn) == (theirs.requires_grad, theirs.is_leaf, None)
    assert type(mine.detach()) is mk.Tensor and type(theirs.detach()) is torch.Tensor
    assert mine.detach().data_ptr() == mine.data_ptr()
    frozen = mknn.Parameter(MK.tensor(data), requires_grad=False)
    assert repr(frozen) == repr(torch.nn.Parameter(data, requires_grad=False))
    assert mknn.Parameter().shape == tuple(torch.nn.Parameter().shape)
    got = outcome(mknn.Parameter, mk.tensor([1, 2]))
    expected = outcome(torch.nn.Parameter, torch.tensor([1, 2]))
    assert got[0] == expected[0] == "raised" and got[1][0] == expected[1][0]
    assert outcome(mknn.Parameter, [1.0])[0] == "raised"


@pytest.mark.parametrize("call", [
    ("register_parameter", "a.b", "param"), ("register_parameter", "", "param"), ("register_parameter", 3, "param"),
    ("register_parameter", "x", "tensor"), ("register_parameter", "forward", "param"),
    ("register_parameter", "x", "nonleaf"),
    ("register_buffer", "a.b", "tensor"), ("register_buffer", "", "tensor"), ("register_buffer", "x", "int"),
    ("register_buffer", "training", "tensor"), ("register_buffer", 1.5, "tensor"),
    ("add_module", "a.b", "module"), ("add_module", "", "module"), ("add_module", "x", "int"),
    ("add_module", "training", "module"), ("add_module", 2, "module"),
])
def test_registration_errors_are_torchs(call):
    method, name, kind = call
    results = {}
    for fw in FRAMEWORKS:
        leaf = fw.tensor(torch.ones(2), requires_grad=True)
        value = {"param": lambda: fw.param(torch.ones(2)), "tensor": lambda: fw.tensor(torch.ones(2)),
                 "module": lambda: CLASSES[fw.name].Double(), "int": lambda: 3,
                 "nonleaf": lambda: fw.nn.Parameter(fw.mul(leaf, 2.0))}[kind]()
        if kind == "nonleaf":  # a Parameter made from a computed tensor is a leaf; force a grad_fn
            value = fw.mul(leaf, 2.0)
            value.__class__ = fw.nn.Parameter
        module = CLASSES[fw.name].Double()
        results[fw.name] = outcome(getattr(module, method), name, value)
    kind_mk, (type_mk, text_mk) = results["minikernel"]
    assert kind_mk == results["torch"][0] == "raised"
    assert (type_mk, plain(text_mk)) == results["torch"][1]


def test_registered_names_are_found_and_deleted_like_torchs():
    seen = {}
    for fw in FRAMEWORKS:
        module = CLASSES[fw.name].Double()
        module.register_parameter("w", fw.param(torch.ones(1)))
        module.register_buffer("running", fw.tensor(torch.zeros(1)), persistent=False)
        module.add_module("child", CLASSES[fw.name].Tanh())
        found = (type(module.w).__name__, type(module.running).__name__, type(module.child).__name__)
        missing = outcome(getattr, module, "nothing")
        del module.running
        seen[fw.name] = (found, missing, sorted(module._non_persistent_buffers_set), outcome(delattr, module, "nope"),
                         [k for k in dir(module) if k in ("w", "child", "running")])
    assert seen["minikernel"][1:] == seen["torch"][1:]
    assert seen["minikernel"][0] == ("Parameter", "Tensor", "Tanh") and seen["torch"][0][2] == "Tanh"


def test_forward_must_be_defined_and_init_takes_no_arguments():
    for fw in FRAMEWORKS:
        with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
            fw.nn.Module()(1)
    assert outcome(mknn.Module, 1) == outcome(torch.nn.Module, 1)
    assert outcome(mknn.Module, a=1) == outcome(torch.nn.Module, a=1)


def test_traversal_and_repr_of_a_tree_with_a_shared_child():
    tree = {"params": [("weight", (2,)), ("bias", None)], "buffers": [("count", (1,), True), ("mask", (2,), False)],
            "children": [("body", {"params": [("scale", (1,))], "buffers": [], "children": [("fc", "shared")]}),
                         ("head", "shared"), ("none", None)]}
    mine, theirs = (build_tree(tree, fw, torch.Generator().manual_seed(0), {}) for fw in FRAMEWORKS)
    assert repr(mine) == repr(theirs)
    for method in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        for kwargs in ({}, {"remove_duplicate": False}, {"prefix": "m"}, {"recurse": False}):
            try:
                expected = [n for n, _ in getattr(theirs, method)(**kwargs)]
            except TypeError:
                continue  # this method does not take that argument
            assert [n for n, _ in getattr(mine, method)(**kwargs)] == expected, (method, kwargs)
    same([summary(p) for p in mine.parameters()], [summary(p) for p in theirs.parameters()])
    assert [type(m).__name__ for m in mine.children()] == [type(m).__name__ for m in theirs.children()]
    assert len(list(mine.modules())) == len(list(theirs.modules())) == 3  # the shared child once
    assert [p.requires_grad for p in mine.requires_grad_(False).parameters()] == [False, False, False]
    assert NODE["minikernel"] is type(mine)


def test_mixing_full_and_old_backward_hooks_is_refused():
    with no_global_hooks():
        results = {}
        for fw in FRAMEWORKS:
            module = CLASSES[fw.name].Double()
            module.register_full_backward_hook(lambda *a: None)
            results[fw.name] = [outcome(module.register_backward_hook, lambda *a: None)]
            other = CLASSES[fw.name].Double()
            other.register_backward_hook(lambda *a: None)
            results[fw.name].append(outcome(other.register_full_backward_hook, lambda *a: None))
            fw.hooks.register_module_full_backward_hook(lambda *a: None)
            results[fw.name].append(outcome(fw.hooks.register_module_backward_hook, lambda *a: None))
        assert results["minikernel"] == results["torch"]
        assert all(kind == "raised" for kind, _ in results["torch"])
    assert outcome(mknn.Module().register_forward_hook, 3)[0] == "raised"


def test_typename_is_torchs():
    assert [typename(v) for v in (1, "a", None, [1], mk.tensor([1.0]), CLASSES["minikernel"].Double())] == [
        plain(torch.typename(v)) if not isinstance(v, mk.Tensor) else "minikernel.FloatTensor"
        for v in (1, "a", None, [1], mk.tensor([1.0]), CLASSES["minikernel"].Double())]
    assert typename(CLASSES["minikernel"].Double()) == torch.typename(CLASSES["torch"].Double())


def test_functional_ops_compute_torchs_values():
    gen = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*s, generator=gen) for s in [(4, 3), (2, 3), (2,)])
    assert np.allclose(mknn.functional.linear(MK.tensor(x), MK.tensor(w), MK.tensor(b)).to_numpy(),
                       torch.nn.functional.linear(x, w, b).numpy(), atol=1e-6)
    assert np.allclose(mknn.functional.linear(MK.tensor(x), MK.tensor(w)).to_numpy(),
                       torch.nn.functional.linear(x, w).numpy(), atol=1e-6)
    assert np.array_equal(mknn.functional.relu(MK.tensor(x)).to_numpy(), torch.relu(x).numpy())
    inplace = MK.tensor(x)
    assert mknn.functional.relu(inplace, inplace=True) is inplace and inplace._version == 1
    for p in (0.0, 0.2, 0.9, 1.0):
        torch.manual_seed(5)
        got = mknn.functional.dropout(MK.tensor(x), p)
        torch.manual_seed(5)
        assert np.array_equal(got.to_numpy(), torch.nn.functional.dropout(x, p).numpy()), p
    assert outcome(mknn.functional.dropout, MK.tensor(x), -0.1) == outcome(torch.nn.functional.dropout, x, -0.1)
