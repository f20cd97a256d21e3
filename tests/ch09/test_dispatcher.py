"""minikernel's dispatcher (library code, no exercise): keys, order, redispatch, modes — against torch.

Oracle: PyTorch's own dispatcher: ``torch._C._dispatch_keys``, ``DispatchKeySet`` order,
the thread-local include/exclude sets, ``TorchDispatchMode`` logs, and the error of a
missing backend kernel. Tensor operators go through the dispatcher in both modes.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import minikernel as mk
from minikernel import dispatch as D
from minikernel.dispatch import DispatchKey as K

TORCH_KEY = {K.CPU: "CPU", K.CUDA: "CUDA", K.Meta: "Meta", K.BackendSelect: "BackendSelect", K.Python: "Python",
             K.ADInplaceOrView: "ADInplaceOrView", K.Autograd: "AutogradCPU", K.Autocast: "AutocastCPU"}


def _torch_names(ks) -> list[str]:
    text = str(ks)
    inside = text[text.index("(") + 1:text.rindex(")")]
    return [n.strip() for n in inside.split(",") if n.strip()]


def test_key_order_is_torchs():
    """Sorting our keys by priority gives the order torch prints a key set holding all of them."""
    ks = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
    for key in K:
        if key not in (K.CPU, K.CUDA, K.Meta):
            ks = ks | torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, TORCH_KEY[key]))
    ours = [TORCH_KEY[k] for k in sorted(k for k in K if k not in (K.CUDA, K.Meta))]
    assert _torch_names(ks) == ours


def test_highest_key_is_torchs():
    ks = torch._C._dispatch_keys(torch.ones(2))
    ours = mk.ones(2)._dispatch_keys()
    assert TORCH_KEY[ours.highest()] == str(ks.highestPriorityTypeId()).split(".")[-1]


def test_a_cpu_tensors_keys_are_torchs():
    assert mk.ones(2)._dispatch_keys().torch_names("cpu") == _torch_names(torch._C._dispatch_keys(torch.ones(2)))


def test_requires_grad_does_not_change_the_key_set():
    """Autograd's key is on every tensor; its kernel decides whether to record, as in torch."""
    x, t = mk.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert x._dispatch_keys() == mk.ones(2)._dispatch_keys()
    assert torch._C._dispatch_keys(t) == torch._C._dispatch_keys(torch.ones(2))


def test_autocast_is_excluded_until_switched_on():
    excluded = _torch_names(torch._C._dispatch_tls_local_exclude_set())
    assert ("AutocastCPU" in excluded) == (K.Autocast in D.local_exclude())
    with torch.autocast("cpu"), D.include_keys(K.Autocast):
        excluded = _torch_names(torch._C._dispatch_tls_local_exclude_set())
        assert ("AutocastCPU" in excluded) == (K.Autocast in D.local_exclude())
        assert D.registry.get("add").key_extractor.get_dispatch_key_set((mk.ones(2), mk.ones(2)), {}).highest() == K.Autocast


def test_keyset_algebra():
    ks = D.keyset(K.CPU, K.Autograd, K.Python)
    assert list(ks) == [K.Autograd, K.Python, K.CPU]
    assert ks.below(K.Autograd) == D.keyset(K.CPU, K.Python)
    assert ks.remove(K.Python).highest() == K.Autograd
    assert repr(ks) == "DispatchKeySet(CPU, Python, Autograd)"
    with pytest.raises(RuntimeError, match="empty DispatchKeySet"):
        D.DispatchKeySet().highest()


def test_schema_parses_torchs_add():
    text = str(torch.ops.aten.add.Tensor._schema)
    schema = D.parse_schema(text)
    theirs = torch.ops.aten.add.Tensor._schema.arguments
    assert [a.name for a in schema.arguments] == [a.name for a in theirs]
    assert [a.kwarg_only for a in schema.arguments] == [a.kwarg_only for a in theirs]
    assert schema.arguments[2].default == theirs[2].default_value
    assert schema.qualified_name == "aten::add.Tensor"


def test_schema_binds_and_refuses():
    schema = D.parse_schema("mylib::f(Tensor x, float k=2.0, *, bool flag=False) -> Tensor")
    assert schema.bind((1,), {"flag": True}) == {"x": 1, "k": 2.0, "flag": True}
    with pytest.raises(TypeError, match="missing required argument 'x'"):
        schema.bind((), {})
    with pytest.raises(TypeError, match="takes 2 positional"):
        schema.bind((1, 2, 3), {})


@pytest.fixture
def scratch_op():
    names = []

    def make(schema: str):
        op = D.registry.define(schema)
        names.append(op.name)
        return op

    yield make
    for name in names:
        D.registry.undefine(name)


def test_redispatch_runs_each_layer_once_highest_first(scratch_op):
    op = scratch_op("test09::f(Tensor x) -> Tensor")
    seen = []

    def layer(name):
        def kernel(keys, x):
            seen.append(name)
            return D.redispatch(op, keys, x)
        return kernel

    D.registry.impl(op, K.Autograd, layer("Autograd"), with_keys=True)
    D.registry.impl(op, K.ADInplaceOrView, layer("ADInplaceOrView"), with_keys=True)
    D.registry.impl(op, K.CPU, lambda x: seen.append("CPU") or x)
    x = mk.ones(2)
    assert op(x) is x
    assert seen == ["Autograd", "ADInplaceOrView", "CPU"]


def test_fallthrough_and_the_trace(scratch_op):
    op = scratch_op("test09::g(Tensor x) -> Tensor")
    D.registry.impl(op, K.CPU, lambda x: x)
    D.registry.impl_fallthrough(op, K.Autograd)
    x = mk.ones(1)  # outside the trace: a factory call is dispatched too
    with D.trace() as steps:
        op(x)
    assert [(s.key, s.how) for s in steps] == [("Autograd", "fallthrough"), ("ADInplaceOrView", "fallthrough"),
                                               ("CPU", "kernel")]


def test_missing_backend_kernel_is_torchs_error(scratch_op):
    op = scratch_op("test09::h(Tensor x) -> Tensor")
    lib = torch.library.Library("test09", "FRAGMENT")
    lib.define("h(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError) as theirs:
        torch.ops.test09.h(torch.ones(1))
    with pytest.raises(NotImplementedError) as ours:
        op(mk.ones(1))
    prefix = "Could not run 'test09::h' with arguments from the 'CPU' backend"
    assert str(theirs.value).startswith(prefix) and str(ours.value).startswith(prefix)


def test_define_twice_is_refused(scratch_op):
    scratch_op("test09::once(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="already defined"):
        D.registry.define("test09::once(Tensor x) -> Tensor")


class _TorchLog(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


class _TorchBacked(D.DispatchMode):
    """Logs each op and computes it with torch on the same memory: works before chapter 02's kernels."""

    def __init__(self):
        self.log = []

    def __dispatch__(self, op, args, kwargs):
        name = op.name.split("::")[1]
        self.log.append(name)
        theirs = [a.to_torch() if isinstance(a, mk.Tensor) else a for a in args]
        if name.endswith("_"):
            getattr(theirs[0], name)(*theirs[1:])
            return args[0]
        return mk.Tensor.from_torch(getattr(torch, name)(*theirs).contiguous())


def _program(lib, a, b):
    return ((a + b) * b).exp().neg().sum()


def test_a_mode_sees_the_ops_torchs_mode_sees():
    a, b = np.arange(6.0).reshape(2, 3) / 10, np.ones((2, 3))
    ta, tb, ma, mb = torch.tensor(a), torch.tensor(b), mk.tensor(a), mk.tensor(b)
    with _TorchLog() as theirs:
        _program(torch, ta, tb)
    with _TorchBacked() as ours:
        _program(mk, ma, mb)
    assert ours.log == theirs.names


def test_a_mode_sits_below_autograd():
    """Python is below Autograd: a mode sees what autograd passes down (torch: the op; here the
    autograd layer computes itself, so nothing), never more than once."""
    x = torch.ones(2, requires_grad=True)
    with _TorchLog() as theirs:
        torch.mul(x, 2)
    assert theirs.names == ["mul"]
    assert K.Python < K.ADInplaceOrView < K.Autograd


def test_tensor_operators_go_through_the_dispatcher():
    a, b = mk.ones(2, 2), mk.ones(2, 2)
    with D.trace() as steps, _TorchBacked():
        a @ b
    assert steps[0].op == "aten::matmul" and steps[0].key == "Autograd"
    assert steps[-1].key == "Python"
    assert D.registry.lookup(D.registry.get("matmul"), K.CPU)[0].name == "linalg.matmul"


def test_inplace_bumps_the_version_at_ad_inplace_or_view():
    a = mk.ones(2)
    before = a._version
    with D.trace() as steps, _TorchBacked():
        a.mul_(2.0)
    assert a._version == before + 1 and a.tolist() == [2.0, 2.0]
    assert [s.key for s in steps if s.how != "fallthrough"] == ["Autograd", "ADInplaceOrView", "Python"]
