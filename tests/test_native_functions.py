"""Each operator is declared once (``minikernel/aten/native_functions.py``); the dispatcher
registration, the Tensor methods, the autograd recording and the conformance table are made
from that declaration. These tests fail when a declared operator lacks one of its parts, or
when an operator nobody declared can be reached."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings

import minikernel
from minikernel import Tensor, dispatch
from minikernel.aten import registration
from minikernel.aten.native_functions import (
    BY_NAME,
    FALLS_THROUGH,
    GENERATED,
    NATIVE_FUNCTIONS,
    NOT_DIFFERENTIABLE,
    Derivative,
    NativeFunction,
    Samples,
)
from minikernel.tensor_ops import method
from tests.conformance.op_table import DECLARED, OPS

ROOT = Path(__file__).resolve().parent.parent
TABLE = {op.name: op for op in OPS}
DECLARED_OPS = {f"aten::{n.name}" for n in NATIVE_FUNCTIONS} | {
    f"aten::{n.schema.name}_" for n in NATIVE_FUNCTIONS if n.inplace_func}
IDS = [n.name for n in NATIVE_FUNCTIONS]


def _differentiable(native: NativeFunction) -> bool:
    return native.autograd not in (NOT_DIFFERENTIABLE, FALLS_THROUGH)


@pytest.mark.parametrize("native", NATIVE_FUNCTIONS, ids=IDS)
def test_the_dispatcher_has_every_kernel_the_declaration_asks_for(native):
    variants = [(native.func, native.dispatch)] + ([(native.inplace_func, None)] if native.inplace_func else [])
    for func, backend in variants:
        schema = dispatch.parse_schema(func)
        op = dispatch.registry.get(schema.qualified_name)
        table = op.table()
        if backend is not None:
            assert table.get("CPU") == table.get("CUDA") == backend, f"{op.name}: backend kernels {table}"
        else:
            assert "CPU" in table and "CUDA" in table, f"{op.name}: no backend kernel: {table}"
        assert ("Autograd" in table) == _differentiable(native), (
            f"{op.name}: Autograd kernel {table.get('Autograd')!r}, declared autograd={native.autograd!r}")
        assert ("ADInplaceOrView" in table) == ("(a!)" in func), f"{op.name}: version bump {table}"
        assert ("BackendSelect" in table) == (not any(a.is_tensor for a in schema.arguments)), (
            f"{op.name}: BackendSelect {table}")


def test_the_registration_registered_exactly_the_declared_operators():
    assert set(registration.registered()) == DECLARED_OPS
    assert DECLARED_OPS <= set(dispatch.registry.operators())


@pytest.mark.parametrize("native", NATIVE_FUNCTIONS, ids=IDS)
def test_every_declared_method_and_function_exists(native):
    for name in (*native.methods, *native.inplace_methods, *native.reflected):
        assert callable(getattr(Tensor, name, None)) or isinstance(getattr(Tensor, name, None), property), (
            f"aten::{native.name} declares Tensor.{name}, which Tensor lacks")
    for name in native.functions:
        assert callable(getattr(minikernel, name, None)), f"aten::{native.name} declares minikernel.{name}"
    assert native.methods or native.functions or native.samples, f"aten::{native.name} is reached by nothing"


@pytest.mark.parametrize("native", NATIVE_FUNCTIONS, ids=IDS)
def test_every_declared_operator_is_in_the_conformance_tests(native):
    if isinstance(native.samples, Samples):
        assert native.methods[0] in {op.name for op in DECLARED}
        if native.inplace_methods:
            assert native.inplace_methods[0] in {op.name for op in DECLARED}
    elif isinstance(native.samples, str) and native.samples.startswith("tests/"):
        assert (ROOT / native.samples).is_file(), f"aten::{native.name}: samples {native.samples!r} is no test file"
    else:
        assert native.samples in TABLE, (f"aten::{native.name}: samples={native.samples!r} names no entry of "
                                         "tests/conformance/op_table.py")


def _inputs(native: NativeFunction) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    if native.samples.tensors == "matrices":
        return [torch.randn(2, 3, generator=g, dtype=torch.float64), torch.randn(3, 4, generator=g, dtype=torch.float64)]
    return [torch.rand(2, 3, generator=g, dtype=torch.float64) + 0.5 for _ in range(native.samples.tensors)]


GENERATED_METHODS = [(n, name, kind) for n in NATIVE_FUNCTIONS if n.binding == GENERATED
                     and isinstance(n.samples, Samples)
                     for kind, names in (("method", n.methods), ("inplace", n.inplace_methods),
                                         ("reflected", n.reflected)) for name in names]


@pytest.mark.parametrize("native, name, kind", GENERATED_METHODS, ids=[f"Tensor.{m}" for _, m, _ in GENERATED_METHODS])
def test_a_generated_method_calls_its_operator_like_torch(native, name, kind):
    theirs = _inputs(native)
    mine = [Tensor.from_torch(t.clone()) for t in theirs]
    args = (2,) if kind == "reflected" else (*theirs[1:], *native.samples.args)
    my_args = (2,) if kind == "reflected" else (*mine[1:], *native.samples.args)
    expected = getattr(theirs[0].clone(), name)(*args)
    with dispatch.LoggingMode() as mode:
        got = getattr(mine[0], name)(*my_args)
    op = native.schema.name + "_" if kind == "inplace" else native.name
    assert mode.log and mode.log[0][0] == f"aten::{op}", f"Tensor.{name} called {mode.log}"
    torch.testing.assert_close(got.to_torch(), expected)


@pytest.mark.parametrize("native", [n for n in NATIVE_FUNCTIONS if isinstance(n.samples, str)
                                    and not n.samples.startswith("tests/")], ids=lambda n: n.name)
def test_a_table_entry_reaches_the_operator_it_stands_for(native):
    """An operator tried through a hand-written table entry (``samples="view"``): that entry's
    call reaches it (the method parses its arguments by hand, ``binding=MANUAL``)."""
    op = TABLE[native.samples]
    reached: set[str] = set()

    @settings(max_examples=10, deadline=None)
    @given(op.inputs)
    def check(inputs):
        for grad in (False, True):  # with gradients too: fill_'s backward reaches aten::full
            mine = [Tensor.from_torch(t.to(torch.float64) if grad and t.dtype.is_floating_point else t)
                    for t in inputs]
            if grad:
                mine = [t.requires_grad_() if t.dtype.kind == "f" else t for t in mine]
            with dispatch.LoggingMode() as mode:
                try:
                    out = op.fn(minikernel, *mine)
                    out = out[0] if isinstance(out, (list, tuple)) else out
                    if grad and isinstance(out, Tensor) and out.requires_grad:
                        out.sum().backward()
                except NotImplementedError as stub:  # student mode: an exercise on the way
                    stubs.append(stub)
                except Exception:  # noqa: BLE001 - a refused input still dispatched
                    pass
            reached.update(entry[0] for entry in mode.log)

    stubs: list[NotImplementedError] = []
    check()
    if f"aten::{native.name}" not in reached and stubs:
        pytest.xfail(f"TODO: {stubs[0]}")
    assert f"aten::{native.name}" in reached, f"table entry {op.name!r} reached {sorted(reached)}, not {native.name}"


@pytest.mark.parametrize("native", [n for n in NATIVE_FUNCTIONS if _differentiable(n) and isinstance(n.samples, Samples)],
                         ids=lambda n: n.name)
def test_every_differentiable_operator_records_a_node(native):
    """The Autograd kernel of every differentiable operator records: a fresh result has a ``grad_fn``
    (the others' table entries compare their ``grad_fn`` with torch's, test_op_table.py)."""
    leaves = [Tensor.from_torch(t).requires_grad_() for t in _inputs(native)]
    out = getattr(leaves[0], native.methods[0])(*leaves[1:], *native.samples.args)
    assert out.grad_fn is not None, f"Tensor.{native.methods[0]} recorded nothing"


def _literal_op_names() -> set[tuple[str, str]]:
    """``route("x", ...)``, ``compute("x", ...)``, ``call("x", ...)`` and ``registry.get("x")`` in the
    library: the operators its code calls by name."""
    found = set()
    for path in (ROOT / "minikernel").rglob("*.py"):
        if "course" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                continue
            fn = node.func
            callee = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            is_get = callee == "get" and isinstance(fn, ast.Attribute) and "registry" in ast.unparse(fn.value)
            if callee in ("route", "_route", "compute", "call") or is_get:
                name = node.args[0].value
                if "::" not in name or name.startswith("aten::"):
                    found.add((f"aten::{name.removeprefix('aten::')}", f"{path.relative_to(ROOT)}:{node.lineno}"))
    return found


def test_the_library_calls_only_declared_operators():
    calls = _literal_op_names()
    assert len(calls) > 20  # the reader sees the library's calls
    undeclared = sorted(f"{where} calls {op}" for op, where in calls if op not in DECLARED_OPS)
    assert not undeclared, ("operators called but not declared in minikernel/aten/native_functions.py:\n"
                            + "\n".join(undeclared))


@pytest.mark.parametrize("name", sorted(TABLE))
def test_the_public_surface_reaches_only_declared_operators(name):
    """Every conformance table entry (every public operator and method) runs under a logging mode:
    each operator it reaches is declared."""
    op = TABLE[name]

    @settings(max_examples=3, deadline=None)
    @given(op.inputs)
    def check(inputs):
        mine = [Tensor.from_torch(t) for t in inputs]
        with dispatch.LoggingMode() as mode:
            try:
                op.fn(minikernel, *mine)
            except Exception:  # noqa: BLE001 - refused inputs (and, in student mode, stubs) reach operators too
                pass
        reached = {entry[0] for entry in mode.log}
        assert reached <= DECLARED_OPS, f"{name} reached undeclared operators {sorted(reached - DECLARED_OPS)}"

    check()


# ------------------------------------------------------- the generators refuse a broken declaration
def test_a_declaration_with_an_unknown_kernel_is_refused():
    with pytest.raises(KeyError, match="no kernel module 'opz'"):
        registration.kernel("opz.add")
    with pytest.raises(AttributeError, match="has no function 'nope'"):
        registration.kernel("unary_ops.nope")


def test_a_declaration_with_an_unknown_recorder_is_refused():
    native = NativeFunction(func="frob(Tensor self) -> Tensor", dispatch="unary_ops.neg", autograd="frob")
    with pytest.raises(AttributeError, match="functions has no 'frob'"):
        registration.recorder(native)


def test_a_derivative_for_a_missing_input_is_refused():
    native = NativeFunction(func="frob(Tensor self) -> Tensor", dispatch="unary_ops.neg",
                            autograd=Derivative("FrobBackward0", other=lambda grad: grad))
    with pytest.raises(ValueError, match=r"formulas for \['other'\]"):
        registration.recorder(native)
    native = NativeFunction(func="frob(Tensor self) -> Tensor", dispatch="unary_ops.neg",
                            autograd=Derivative("FrobBackward0", self=lambda grad, out: grad))
    with pytest.raises(ValueError, match=r"use \['out'\]"):
        registration.recorder(native)


def test_a_method_needs_self_in_the_schema():
    native = NativeFunction(func="frob(Tensor x) -> Tensor", dispatch="unary_ops.neg", autograd=NOT_DIFFERENTIABLE)
    with pytest.raises(ValueError, match="binding=MANUAL"):
        method(native, "frob")


def test_a_generated_method_binds_like_its_schema():
    x = Tensor.from_torch(torch.arange(6.0).reshape(2, 3))
    assert x.sum(1, keepdim=True).shape == (2, 1)
    assert x.sum(keepdim=True, dim=0).shape == (1, 3)
    with pytest.raises(TypeError, match="keepdims"):
        x.sum(keepdims=True)
    with pytest.raises(TypeError):
        x.add()
    np.testing.assert_array_equal(x.where(x > 2, -x).to_numpy(), torch.arange(6.0).reshape(2, 3).where(
        torch.arange(6.0).reshape(2, 3) > 2, -torch.arange(6.0).reshape(2, 3)).numpy())


def test_by_name_lists_every_declaration_once():
    assert len(BY_NAME) == len(NATIVE_FUNCTIONS)


def test_sqrt_comes_from_its_declaration_alone():
    """``sqrt`` was added as one declaration and one kernel (``unary_ops.sqrt``): the dispatcher,
    the Tensor method, its autograd node and its conformance entry all come from them."""
    assert dispatch.registry.get("sqrt").table() == {
        "CPU": "unary_ops.sqrt", "CUDA": "unary_ops.sqrt", "Autograd": "autograd.functions.sqrt"}
    theirs = (torch.rand(2, 3, dtype=torch.float64) + 0.1).t().requires_grad_()
    mine = Tensor.from_torch(theirs.detach().clone()).requires_grad_()
    expected, got = theirs.sqrt(), mine.sqrt()
    torch.testing.assert_close(got.detach().to_torch(), expected.detach())
    assert got.grad_fn.name() == expected.grad_fn.name() == "SqrtBackward0"
    g = torch.randn(3, 2, dtype=torch.float64)
    assert "sqrt" in {op.name for op in DECLARED}
    expected.backward(g)
    try:
        got.backward(Tensor.from_torch(g.clone()))
    except NotImplementedError as stub:  # student mode: chapter 03's engine
        pytest.xfail(f"TODO: {stub}")
    torch.testing.assert_close(mine.grad.to_torch(), theirs.grad)


def test_an_entry_describes_itself_as_the_yaml_would():
    add, sqrt = BY_NAME["add"].describe(), BY_NAME["sqrt"].describe()
    assert add.splitlines()[:3] == ["- func: add(Tensor self, Tensor other) -> Tensor",
                                    "  in place: add_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
                                    "  dispatch: CPU, CUDA: binary_ops.add"]
    assert "  derivative: SqrtBackward0, self: grad / (2 * result)" in sqrt.splitlines()
