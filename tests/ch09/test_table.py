"""minikernel's dispatch tables (library code, no exercise): computed from the registrations when
they change, looked up by the highest key with fallthrough keys masked out — against torch.

Oracles: torch's computed tables (``torch._C._dispatch_dump_table``: which keys hold a kernel,
a backend fallback or fallthrough), torch's ``OperatorEntry::checkInvariants`` (every entry is
what ``computeDispatchTableEntry`` gives for the current registrations, here
``registry.lookup``), and torch's ``MultiDispatchKeySet`` (every tensor of a ``Tensor[]``
argument counts).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import minikernel as mk
from minikernel import dispatch as D
from minikernel.dispatch import DispatchKey as K
from minikernel.dispatch.extractor import FULL

from .scratch import Scratch, numpy_kernel


@pytest.fixture
def make():
    scratch = Scratch()
    yield scratch
    scratch.close()


def _check_invariants(op: D.Operator) -> None:
    """torch's ``OperatorEntry::checkInvariants``: the table is what the registrations compute to."""
    for key in K:
        entry, how = D.registry.lookup(op, key)
        assert (op.dispatch_table[key], op.provenance[key]) == (entry, how), (op.name, key.name)
        assert bool(op.key_extractor.non_fallthrough_keys >> key & 1) == (entry is not D.FALLTHROUGH), (op.name, key)


def test_every_operators_table_is_computed_from_its_registrations():
    ops = D.registry.operators().values()
    assert len(ops) > 50
    for op in ops:
        _check_invariants(op)


def test_each_registration_updates_the_table(make):
    op = make("test09::tab(Tensor x) -> Tensor")
    _check_invariants(op)
    assert op.dispatch_table[K.CPU] is None and op.provenance[K.Autograd] == "fallback"
    D.registry.impl(op, K.CPU, numpy_kernel(lambda x: x + 1))
    D.registry.impl_fallthrough(op, K.Python)
    D.registry.impl(op, K.Autograd, lambda keys, x: D.redispatch(op, keys, x), with_keys=True)
    _check_invariants(op)
    assert op.dump_table()["Python"] == "fallthrough [kernel]" and op.provenance[K.Autograd] == "kernel"
    saved = D.registry._FALLBACKS[K.ADInplaceOrView]
    try:
        D.registry.fallback(K.ADInplaceOrView, lambda op_, keys, args, kwargs: ("boxed", keys))
        _check_invariants(op)
        assert op.kernel_for(D.keyset(K.CPU, K.ADInplaceOrView)) == (K.ADInplaceOrView,
                                                                    D.registry._FALLBACKS[K.ADInplaceOrView])
        assert D.registry.deregister_fallback(K.ADInplaceOrView) is not None
        _check_invariants(op)
        assert op.dispatch_table[K.ADInplaceOrView] is None and "ADInplaceOrView" not in op.dump_table()
    finally:
        D.registry.fallback(K.ADInplaceOrView, saved)
    _check_invariants(op)
    del op.kernels[K.Python]  # a registration removed by hand: the table follows too
    _check_invariants(op)
    assert op.provenance[K.Python] == "fallback"


def test_an_operator_declared_after_a_fallback_gets_it(make):
    saved = D.registry._FALLBACKS[K.Autocast]
    try:
        D.registry.fallback(K.Autocast, lambda op_, keys, args, kwargs: "autocast fallback", name="late")
        op = make("test09::late(Tensor x) -> Tensor")
        assert op.dump_table()["Autocast"] == "late [backend fallback]"
    finally:
        D.registry.fallback(K.Autocast, saved)
    assert op.dump_table()["Autocast"] == "fallthrough [backend fallback]"


def _torch_kinds(op: str) -> dict[str, str]:
    kinds = {}
    for line in torch._C._dispatch_dump_table(op).splitlines():
        key, _, entry = line.partition(": ")
        where = re.search(r"\[([^\]]+)\]$", entry).group(1)
        kinds[key] = "fallthrough" if entry.startswith("fallthrough") else (
            "fallback" if where == "backend fallback" else "kernel")
    return kinds


def _our_kinds(op: D.Operator) -> dict[str, str]:
    names = {"Autograd": "AutogradCPU", "Autocast": "AutocastCPU"}
    return {names.get(key, key): "fallthrough" if entry.startswith("fallthrough") else (
        "fallback" if entry.endswith("[backend fallback]") else "kernel") for key, entry in op.dump_table().items()}


@pytest.mark.parametrize("ours, theirs, keys", [
    ("add", "aten::add.Tensor", ["CPU", "BackendSelect", "Python", "ADInplaceOrView", "AutogradCPU", "AutocastCPU"]),
    ("mul_", "aten::mul_.Tensor", ["CPU", "BackendSelect", "Python", "ADInplaceOrView", "AutogradCPU", "AutocastCPU"]),
    ("ones", "aten::ones", ["CPU", "BackendSelect", "Python", "ADInplaceOrView", "AutocastCPU"]),
])
def test_computed_tables_are_torchs(ours, theirs, keys):
    """Kernel, backend fallback or fallthrough, key by key, as torch's computed table says."""
    mine, torchs = _our_kinds(D.registry.get(ours)), _torch_kinds(theirs)
    assert {k: mine[k] for k in keys} == {k: torchs[k] for k in keys}


def test_a_fallthrough_key_is_masked_out_of_every_call(make):
    op = make("test09::masked(Tensor x) -> Tensor")
    D.registry.impl(op, K.CPU, lambda x: "cpu")
    D.registry.impl_fallthrough(op, K.Autograd)
    mask = op.key_extractor.non_fallthrough_keys
    fallthrough = {k for k in K if not mask >> k & 1}
    assert fallthrough == {K.Autograd, K.ADInplaceOrView, K.Autocast, K.BackendSelect}
    keys = D.keyset(K.CPU, K.ADInplaceOrView, K.Autograd)
    assert op.kernel_for(keys)[0] == K.CPU and op(mk.ones(1)) == "cpu"
    with pytest.raises(RuntimeError, match="no dispatch key left"):
        op.kernel_for(D.keyset(K.ADInplaceOrView, K.Autograd))
    assert D.DispatchKeySet(bits=FULL) == D.DispatchKeySet(K)


def test_the_kernel_gets_the_calls_keys_below_its_own(make):
    """Fallthrough keys below a kernel's key are still handed down (the mask only picks the entry)."""
    op = make("test09::below(Tensor x) -> Tensor")
    D.registry.impl(op, K.Autograd, lambda keys, x: keys, with_keys=True)
    keys = D.keyset(K.CPU, K.Python, K.ADInplaceOrView, K.Autograd, K.Autocast)
    assert D.redispatch(op, keys, mk.ones(1)) == D.keyset(K.CPU, K.Python, K.ADInplaceOrView)


def test_the_trace_shows_the_keys_the_mask_skipped(make):
    op = make("test09::skipped(Tensor x) -> Tensor")
    D.registry.impl(op, K.CPU, lambda x: x)
    D.registry.impl_fallthrough(op, K.Autograd)
    x = mk.ones(1)
    with D.include_keys(K.Autocast), D.trace() as steps:
        op(x)
    assert [(s.key, s.how) for s in steps] == [("Autocast", "fallthrough"), ("Autograd", "fallthrough"),
                                               ("ADInplaceOrView", "fallthrough"), ("CPU", "kernel")]
    with D.trace() as steps, pytest.raises(RuntimeError, match="no dispatch key left"):
        D.redispatch(op, D.keyset(K.ADInplaceOrView, K.Autograd), x)
    assert [(s.key, s.how) for s in steps] == [("Autograd", "fallthrough"), ("ADInplaceOrView", "fallthrough")]


class _Keyed:
    """Anything with its own dispatch keys counts as a tensor for the dispatcher."""

    def __init__(self, *keys: K) -> None:
        self.keys = D.keyset(*keys)

    def _dispatch_keys(self) -> D.DispatchKeySet:
        return self.keys


def test_every_tensor_of_a_tensor_list_counts():
    """torch's ``MultiDispatchKeySet`` ORs the key sets of a ``Tensor[]``'s tensors; so does the extractor."""
    cat = D.registry.get("cat")
    tensors = [_Keyed(K.CPU, K.Autograd), _Keyed(K.Meta, K.Python)]
    keys = cat.key_extractor.get_dispatch_key_set((tensors, 0), {})
    assert keys == D.keyset(K.CPU, K.Meta, K.Python, K.Autograd)
    assert cat.key_extractor.get_dispatch_key_set(([],), {}) == D.keyset(K.BackendSelect, K.CPU)


def test_cat_of_real_tensors_dispatches_on_their_keys():
    a, b = mk.tensor(np.ones(2)), mk.tensor(np.zeros(2))
    with D.trace() as steps:
        mk.cat([a, b])
    assert steps[0].op == "aten::cat" and steps[0].key == "Autograd"
