"""Exercise 4.1: Module.__setattr__ files parameters, buffers and submodules like torch's.

Any assignment in a module's ``__init__`` goes through ``module_setattr``, so every
test here reaches 4.1 first: building a Linear, a ReLU or a Dropout needs it.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minikernel.nn as mknn
from tests.ch04.twins import CLASSES, FRAMEWORKS, MK, outcome, plain, same, summary

NAMES = ["w", "b", "sub", "count", "training"]
KINDS = ["param", "tensor", "module", "int", "none"]


def _value(kind: str, fw):
    return {"param": lambda: fw.param(torch.ones(2)), "tensor": lambda: fw.tensor(torch.zeros(2)),
            "module": lambda: CLASSES[fw.name].Double(), "int": lambda: 7, "none": lambda: None}[kind]()


def _kind(value) -> str:
    for fw in FRAMEWORKS:
        if isinstance(value, fw.nn.Parameter):
            return "param"
        if isinstance(value, fw.Tensor):
            return "tensor"
        if isinstance(value, fw.nn.Module):
            return "module"
    return repr(value)


def _state(module) -> tuple:
    """Where every name lives, and what kind of value it holds."""
    return ([(k, _kind(v)) for k, v in module._parameters.items()], [(k, _kind(v)) for k, v in module._buffers.items()],
            sorted(module._non_persistent_buffers_set), [(k, _kind(v)) for k, v in module._modules.items()],
            sorted((k, _kind(v)) for k, v in vars(module).items() if not k.startswith("_")))


def _apply(module, op, fw):
    kind = op[0]
    if kind == "set":
        return setattr(module, op[1], _value(op[2], fw))
    if kind == "register_buffer":
        return module.register_buffer(op[1], _value(op[2], fw), persistent=op[3])
    if kind == "register_parameter":
        return module.register_parameter(op[1], _value(op[2], fw))
    return delattr(module, op[1])


def _comparable(result):
    kind, value = result
    if kind == "ok":
        return kind, None
    return kind, (value[0], plain(value[1]).replace("torch.nn.Buffer, ", ""))


set_op = st.tuples(st.just("set"), st.sampled_from(NAMES), st.sampled_from(KINDS))
ops = st.one_of(set_op,
                st.tuples(st.just("register_buffer"), st.sampled_from(NAMES), st.sampled_from(["tensor", "none"]),
                          st.booleans()),
                st.tuples(st.just("register_parameter"), st.sampled_from(NAMES), st.sampled_from(["param", "none"])),
                st.tuples(st.just("del"), st.sampled_from(NAMES)))


@pytest.mark.exercise("4.1")
@given(first=set_op, rest=st.lists(ops, max_size=12))
def test_assignments_land_where_torchs_do(first, rest):
    modules = {fw.name: fw.nn.Module() for fw in FRAMEWORKS}
    for op in [first, *rest]:
        results = {fw.name: _comparable(outcome(_apply, modules[fw.name], op, fw)) for fw in FRAMEWORKS}
        assert results["minikernel"] == results["torch"], op
        assert _state(modules["minikernel"]) == _state(modules["torch"]), op


@pytest.mark.exercise("4.1")
@pytest.mark.parametrize("kind", ["param", "module", "int"])
def test_assigning_before_super_init(kind):
    results = {}
    for fw in FRAMEWORKS:
        class Forgetful(fw.nn.Module):
            def __init__(self):  # no super().__init__()
                self.x = _value(kind, fw)

        results[fw.name] = _comparable(outcome(Forgetful))
    assert results["minikernel"] == results["torch"]


def _mlp(fw, seed=0):
    class MLP(fw.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = fw.nn.Linear(2, 4)
            self.act = fw.nn.ReLU()
            self.drop = fw.nn.Dropout(0.25)
            self.fc2 = fw.nn.Linear(4, 3, bias=False)
            self.register_buffer("steps", fw.tensor(torch.zeros(1)))
            self.fc2.weight = self.fc2.weight  # re-assigning a parameter keeps it in place
            self.tied = self.fc1  # the same module under a second name

        def forward(self, x):
            return self.fc2(self.drop(self.act(self.fc1(x))))

    torch.manual_seed(seed)
    return MLP()


@pytest.mark.exercise("4.1")
def test_an_mlp_built_by_assignment_matches_torchs():
    models = {fw.name: _mlp(fw) for fw in FRAMEWORKS}
    mk, tt = models["minikernel"], models["torch"]
    assert repr(mk) == repr(tt)
    assert [n for n, _ in mk.named_parameters()] == [n for n, _ in tt.named_parameters()]
    assert [n for n, _ in mk.named_parameters(remove_duplicate=False)] == [
        n for n, _ in tt.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in mk.named_modules()] == [n for n, _ in tt.named_modules()]
    assert [n for n, _ in mk.named_children()] == [n for n, _ in tt.named_children()]
    assert [n for n, _ in mk.named_buffers()] == [n for n, _ in tt.named_buffers()]
    same([summary(p) for p in mk.parameters()], [summary(p) for p in tt.parameters()])  # torch's init, same seed
    x = torch.randn(5, 2)
    mk.eval(), tt.eval()
    same(summary(mk(MK.tensor(x))), summary(tt(x)))
    assert [m.training for m in mk.modules()] == [m.training for m in tt.modules()] == [False] * 5
    assert mk.train() is mk and tt.train() is tt
    assert [m.training for m in mk.modules()] == [m.training for m in tt.modules()] == [True] * 5
    visited = {fw: [] for fw in models}
    for fw, model in models.items():
        model.apply(lambda m, fw=fw: visited[fw].append(type(m).__name__))
    assert visited["minikernel"] == visited["torch"] == ["Linear", "ReLU", "Dropout", "Linear", "MLP"]
    assert outcome(mk.train, "yes") == outcome(tt.train, "yes")


@pytest.mark.exercise("4.1")
@pytest.mark.parametrize("bias, dtype", [(True, None), (False, None), (True, "float64")])
def test_linear_starts_from_torchs_weights_and_computes_the_same(bias, dtype):
    torch.manual_seed(3)
    mine = mknn.Linear(3, 5, bias=bias, dtype=dtype)
    torch.manual_seed(3)
    theirs = torch.nn.Linear(3, 5, bias=bias, dtype=getattr(torch, dtype) if dtype else None)
    assert repr(mine) == repr(theirs)
    assert [(n, tuple(p.shape), str(p.dtype)) for n, p in mine.named_parameters()] == [
        (n, tuple(p.shape), str(p.dtype).removeprefix("torch.")) for n, p in theirs.named_parameters()]
    for (_, a), (_, b) in zip(mine.named_parameters(), theirs.named_parameters()):
        assert np.array_equal(a.to_numpy(), b.detach().numpy())
    x = torch.randn(4, 3, dtype=theirs.weight.dtype)
    assert np.allclose(mine(MK.tensor(x)).to_numpy(), theirs(x).detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.exercise("4.1")
@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_dropout_drops_what_torchs_drops_in_training_and_nothing_in_eval(p):
    mine, theirs = mknn.Dropout(p), torch.nn.Dropout(p)
    assert repr(mine) == repr(theirs)
    x = torch.randn(6, 7)
    torch.manual_seed(11)
    got = mine(MK.tensor(x, requires_grad=True))
    torch.manual_seed(11)
    expected = theirs(x.requires_grad_())
    assert np.array_equal(got.to_numpy(), expected.detach().numpy())
    mine.eval(), theirs.eval()
    plain_x = MK.tensor(x)
    assert mine(plain_x) is plain_x and theirs(x) is x
    assert outcome(mknn.Dropout, 1.5) == (
        "raised", ("ValueError", "dropout probability has to be between 0 and 1, but got 1.5"))


@pytest.mark.exercise("4.1")
def test_relu_and_sequential():
    torch.manual_seed(0)
    mine = mknn.Sequential(mknn.Linear(2, 3), mknn.ReLU(inplace=True), mknn.Linear(3, 1))
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(inplace=True), torch.nn.Linear(3, 1))
    assert repr(mine) == repr(theirs)
    assert repr(mine[1:]) == repr(theirs[1:]) and repr(mine[-1]) == repr(theirs[-1]) and len(mine) == len(theirs)
    assert [type(m).__name__ for m in mine] == [type(m).__name__ for m in theirs]
    assert outcome(mine.__getitem__, 3) == outcome(theirs.__getitem__, 3)
    mine.append(mknn.ReLU())
    theirs.append(torch.nn.ReLU())
    assert repr(mine) == repr(theirs)
    x = torch.randn(5, 2)
    same(summary(mine(MK.tensor(x))), summary(theirs(x)))


@pytest.mark.exercise("4.1")
@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    grads = {}
    for fw in FRAMEWORKS:
        model = _mlp(fw)
        for p in model.parameters():
            p.grad = fw.tensor(torch.ones(p.shape))
        kept = model.fc1.weight.grad
        model.zero_grad(set_to_none=set_to_none)
        grads[fw.name] = ([None if p.grad is None else summary(p.grad) for p in model.parameters()],
                          model.fc1.weight.grad is kept)
    same(grads["minikernel"], grads["torch"])
