"""Every entry of the operator table (``op_table.py``) through one battery, against torch:
forward (values, shape, dtype; strides and shared memory for views), backward (gradients,
``grad_fn`` names, versions: ``helpers.assert_autograd_same_as_torch``), ``gradcheck`` in
float64, and the same call on views of a leaf and of a non-leaf."""
from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, settings

import minikernel
from minikernel import Tensor
from tests.conformance.op_table import NOT_OPERATORS, OPS
from tests.conformance.programs import MATMUL_NODES

BY_NAME = {op.name: op for op in OPS}
GRAD_OPS = [op.name for op in OPS if op.grad]


def _public_names() -> set[str]:
    names = {n for n in dir(Tensor) if not n.startswith("_")}
    names |= {n for n in vars(Tensor) if n.startswith("__") and n.endswith("__") and callable(getattr(Tensor, n))}
    for cls in Tensor.__mro__[1:-1]:
        names |= {n for n in vars(cls) if n.startswith("__") and n.endswith("__") and callable(getattr(cls, n))}
    names -= {"__init__", "__repr__", "__init_subclass__", "__class_getitem__"}
    return names | set(minikernel.__all__)


def test_every_public_name_is_listed():
    listed = {name.split("(")[0].removeprefix("Tensor.") for name in BY_NAME} | set(NOT_OPERATORS)
    missing = sorted(_public_names() - listed)
    assert not missing, f"public names in neither the operator table nor NOT_OPERATORS: {missing}"
    stale = sorted(set(NOT_OPERATORS) - _public_names())
    assert not stale, f"NOT_OPERATORS lists names minikernel does not have: {stale}"


def _outcome(fn, *args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args), None
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 - compared with torch's
        return None, err


def _compare(expected, got, view: bool, theirs, mine, where: str = "result") -> None:
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(expected), f"{where}: {got!r} vs {expected!r}"
        for i, (e, g) in enumerate(zip(expected, got)):
            _compare(e, g, view, theirs, mine, f"{where}[{i}]")
        return
    if not isinstance(expected, torch.Tensor):
        assert got == expected, f"{where}: minikernel gave {got!r}, torch {expected!r}"
        return
    assert isinstance(got, Tensor), f"{where}: expected a minikernel Tensor, got {type(got).__name__}"
    assert got.shape == tuple(expected.shape), f"{where}: shape {got.shape} vs torch's {tuple(expected.shape)}"
    assert str(got.dtype) == str(expected.dtype).removeprefix("torch."), f"{where}: dtype {got.dtype} vs {expected.dtype}"
    torch.testing.assert_close(got.detach().to_torch(), expected.detach(), rtol=1e-5, atol=1e-6, equal_nan=True,
                               msg=lambda m: f"{where}: values differ: {m}")
    for i, (t, m) in enumerate(zip(theirs, mine)):
        if not (expected.untyped_storage().nbytes() and t.untyped_storage().nbytes()):
            continue  # torch's empty storages all sit at address 0
        t_shares = expected.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        m_shares = got.untyped_storage().data_ptr() == m.untyped_storage().data_ptr()
        assert m_shares == t_shares, f"{where}: shares input {i}'s memory: {m_shares} vs torch's {t_shares}"
    if view:  # (a size-1 dim's stride never addresses anything: torch and numpy pick it differently)
        pairs = [(a, b) for a, b, n in zip(got.stride(), expected.stride(), expected.shape) if n > 1]
        assert all(a == b for a, b in pairs), f"{where}: strides {got.stride()} vs {expected.stride()}"
        assert got.storage_offset() == expected.storage_offset(), f"{where}: storage offset"


@pytest.mark.parametrize("name", list(BY_NAME))
def test_forward_like_torch(name):
    op = BY_NAME[name]

    @settings(max_examples=25)
    @given(op.inputs)
    def check(inputs):
        expected, torch_error = _outcome(op.fn, torch, *inputs)
        mine = [Tensor.from_torch(t) for t in inputs]
        try:
            got, mk_error = _outcome(op.fn, minikernel, *mine)
        except NotImplementedError as stub:  # student mode: a chapter 01 exercise this op uses
            pytest.xfail(f"TODO: {stub}")
        if torch_error is not None or mk_error is not None:
            assert type(mk_error) is type(torch_error), f"torch raised {torch_error!r}, minikernel {mk_error!r}"
            return
        _compare(expected, got, op.view, inputs, mine)

    check()


def _float64(inputs):
    return tuple(t.to(torch.float64) if t.dtype.is_floating_point else t for t in inputs)


def _first(result):
    return result[0] if isinstance(result, (list, tuple)) else result


@pytest.mark.exercise("3.9")  # backward needs chapter 03's engine and formulas (student mode: TODO)
@pytest.mark.parametrize("name", GRAD_OPS)
def test_backward_like_torch(name):
    op = BY_NAME[name]

    @settings(max_examples=15)
    @given(op.inputs)
    def check(inputs):
        inputs = _float64(inputs)
        if not all(t.dtype == torch.float64 for t in inputs):
            return

        def program(*leaves, lib):
            out = _first(op.fn(lib, *leaves))
            return out * 1 if isinstance(out, (torch.Tensor, Tensor)) and out._is_view() else out



        reached.append(_backward_check(program, inputs))

    reached: list[bool] = []
    check()
    if not any(reached):  # every sample was refused alike by both: there was no backward to compare
        pytest.skip(f"{name}: torch refuses every sample here (minikernel agreed); no backward to compare")


def _backward_check(program, inputs) -> bool:
    """Forward on both; when neither refuses, backward with the same gradient and compare.
    Returns whether backward ran (a test ``assume``s it, so every example reaches the engine)."""
    leaves_t = [t.detach().clone().requires_grad_() for t in inputs]
    leaves_m = [Tensor.from_torch(t.detach().clone()).requires_grad_() for t in inputs]
    expected, torch_error = _outcome(lambda: program(*leaves_t, lib=torch))
    got, mk_error = _outcome(lambda: program(*leaves_m, lib=minikernel))
    if torch_error is not None or mk_error is not None:
        assert type(mk_error) is type(torch_error), f"torch raised {torch_error!r}, minikernel {mk_error!r}"
        return False
    if not isinstance(expected, torch.Tensor) or not expected.requires_grad:
        return False
    g = torch.randn(expected.shape, dtype=expected.dtype, generator=torch.Generator().manual_seed(0))
    _, torch_error = _outcome(lambda: expected.backward(g))
    _, mk_error = _outcome(lambda: got.backward(Tensor.from_torch(g.clone())))
    assert type(mk_error) is type(torch_error), f"backward: torch raised {torch_error!r}, minikernel {mk_error!r}"
    assert _name(got) == _name(expected) or (_name(got), _name(expected) in MATMUL_NODES) == ("MatmulBackward0", True), (
        f"grad_fn {_name(got)} vs torch's {_name(expected)}")
    for i, (t, m) in enumerate(zip(leaves_t, leaves_m)):
        assert (t.grad is None) == (m.grad is None), f"leaf {i}: .grad {m.grad} vs torch's {t.grad}"
        if t.grad is not None:
            torch.testing.assert_close(m.grad.to_torch(), t.grad, rtol=1e-7, atol=1e-9, equal_nan=True,
                                       msg=lambda msg, i=i: f"leaf {i} gradient: {msg}")
            strides = [(a, b) for a, b, n in zip(m.grad.stride(), t.grad.stride(), t.shape) if n > 1]
            assert all(a == b for a, b in strides), f"leaf {i}: .grad strides {m.grad.stride()} vs {t.grad.stride()}"
    return True


def _name(t):
    node = t.grad_fn
    return None if node is None else node.name().removeprefix("torch::autograd::")


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("name", GRAD_OPS)
def test_gradcheck(name):
    """minikernel's gradcheck (finite differences against backward) on every differentiable op."""
    op = BY_NAME[name]

    @settings(max_examples=5)
    @given(op.inputs)
    def check(inputs):
        inputs = _float64(inputs)
        if not all(t.dtype == torch.float64 and t.numel() for t in inputs):
            return
        leaves = [Tensor.from_torch(t.detach().clone().contiguous()).requires_grad_() for t in inputs]

        def f(*xs):
            return _first(op.fn(minikernel, *xs)) * 1

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch_out = _first(op.fn(torch, *[t.detach().clone().contiguous() for t in inputs]))
        except Exception:  # noqa: BLE001 - an input torch refuses: nothing to check
            return
        if not isinstance(torch_out, torch.Tensor) or not torch_out.dtype.is_floating_point:
            return
        assert minikernel.autograd.gradcheck(f, tuple(leaves), eps=1e-6, atol=1e-5, rtol=1e-3)
        reached.append(True)

    reached: list[bool] = []
    check()
    if not reached:  # every sample was empty or refused by torch: nothing to differentiate
        pytest.skip(f"{name}: no sample torch differentiates here; nothing for gradcheck")


@pytest.mark.exercise("3.9")
@pytest.mark.parametrize("name", GRAD_OPS)
@pytest.mark.parametrize("where", ["view of a non-leaf", "transposed view of a non-leaf", "0-d element"])
def test_on_views_like_torch(name, where):
    """The op applied to a view of an intermediate result, then backward to the leaf."""
    op = BY_NAME[name]

    @settings(max_examples=5)
    @given(op.inputs)
    def check(inputs):
        inputs = _float64(inputs)
        if not all(t.dtype == torch.float64 for t in inputs):
            return

        def program(*leaves, lib):
            first = leaves[0] * 1
            if where == "view of a non-leaf":
                first = first[None][0]
            elif where == "transposed view of a non-leaf":
                first = first.transpose(0, -1) if first.dim() else first
            elif first.numel():
                first = first.reshape(-1)[0]
            out = _first(op.fn(lib, first, *leaves[1:]))
            return out * 1 if isinstance(out, (torch.Tensor, Tensor)) and out.requires_grad else out

        reached.append(_backward_check(program, inputs))

    reached: list[bool] = []
    check()
    if not any(reached):  # every sample was refused alike by both: there was no backward to compare
        pytest.skip(f"{name}: torch refuses every sample here (minikernel agreed); no backward to compare")
