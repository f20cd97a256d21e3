"""Exercises 9.1–9.4: the dispatcher's core rebuilt, checked against minikernel's dispatcher and torch.

Oracles: ``minikernel.dispatch`` (the library's dispatcher: its computed tables, the same semantics), PyTorch's
key sets and thread-local sets, nested ``TorchDispatchMode`` order, and
``torch.library.custom_op`` + ``register_autograd`` gradients and ``gradcheck``.
The operators are throw-away ones with numpy kernels, so nothing here needs chapter 02.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

import minikernel as mk
from minikernel import dispatch as D, library
from minikernel.autograd import gradcheck
from minikernel.course.exercise import stub_exercise_id
from minikernel.dispatch import DispatchKey as K, rebuild as R, state

from .scratch import Scratch, numpy_kernel


def _refusal(call, kind: type = NotImplementedError) -> Exception:
    """The ``kind`` error ``call()`` raises; an unfinished stub's own error goes through (TODO)."""
    try:
        call()
    except kind as err:
        if stub_exercise_id(err):
            raise
        return err
    raise AssertionError(f"expected a {kind.__name__}: nothing was refused")


WRAPPERS = [K.BackendSelect, K.Python, K.ADInplaceOrView, K.Autograd, K.Autocast]


@pytest.fixture
def make():
    scratch = Scratch()
    yield scratch
    scratch.close()


# ------------------------------------------------------------------ 9.1
@pytest.mark.exercise("9.1")
@settings(max_examples=60, deadline=None)
@given(n_tensors=st.integers(0, 3), n_numbers=st.integers(0, 2),
       include=st.sets(st.sampled_from(list(K))), exclude=st.sets(st.sampled_from(list(K))))
def test_compute_keys_is_the_dispatchers(n_tensors, n_numbers, include, exclude):
    op = D.registry.get("aten::add") if n_tensors + n_numbers == 2 else None
    args = tuple(mk.ones(1) for _ in range(n_tensors)) + (1.5,) * n_numbers
    if op is None:
        op = D.registry.define_open("test09::anything")
    with D.include_keys(*include), D.exclude_keys(*exclude):
        assert R.compute_keys(op, args, {}) == op.key_extractor.get_dispatch_key_set(args, {})


@pytest.mark.exercise("9.1")
def test_exclude_wins_over_include():
    """A key both included and excluded is out (torch: ``(keys | include) - exclude``)."""
    op = D.registry.get("aten::neg")
    with D.include_keys(K.Python), D.exclude_keys(K.Python):
        assert K.Python not in R.compute_keys(op, (mk.ones(1),), {})


@pytest.mark.exercise("9.1")
def test_highest_key_is_torchs_with_and_without_autocast():
    op = D.registry.get("aten::add")
    x, t = mk.ones(2), torch.ones(2)

    def torch_highest():
        ks = torch._C._dispatch_keys(t)
        for k in ("AutocastCPU",):
            if k in str(torch._C._dispatch_tls_local_exclude_set()):
                ks = ks.remove(getattr(torch._C.DispatchKey, k))
        return str(ks.highestPriorityTypeId()).split(".")[-1]

    assert torch_highest() == "AutogradCPU" and R.compute_keys(op, (x, x), {}).highest() == K.Autograd
    with torch.autocast("cpu"), D.include_keys(K.Autocast):
        assert torch_highest() == "AutocastCPU" and R.compute_keys(op, (x, x), {}).highest() == K.Autocast


@pytest.mark.exercise("9.1")
def test_every_tensor_argument_counts(make):
    op = make("test09::pair(Tensor a, Tensor b) -> Tensor")
    a, b = mk.ones(1), mk.ones(1)
    b._dispatch_keys = lambda: D.keyset(K.Meta, K.Python)  # a tensor with extra keys
    keys = R.compute_keys(op, (a,), {"b": b})
    assert keys == op.key_extractor.get_dispatch_key_set((a,), {"b": b}) and K.Meta in keys and K.CPU in keys


@pytest.mark.exercise("9.1")
def test_a_call_without_tensors_goes_to_backend_select(make):
    """Factory functions (``torch.ones``) have no tensor argument: BackendSelect picks the backend."""
    op = make("test09::factory(int n) -> Tensor")
    keys = R.compute_keys(op, (3,), {})
    assert keys.highest() == K.BackendSelect and keys.backend() == K.CPU
    assert "BackendSelect" in torch._C._dispatch_dump("aten::ones")


# ------------------------------------------------------------------ 9.2
def _layers(op, seen, loop):
    def layer(name):
        def kernel(keys, x):
            seen.append((name, keys))
            return loop(op, keys, (x,), {})
        kernel.__qualname__ = name
        return kernel
    return layer


@pytest.mark.exercise("9.2")
def test_run_dispatch_visits_each_layer_once_highest_first(make):
    op = make("test09::f(Tensor x) -> Tensor")
    seen = []
    layer = _layers(op, seen, R.run_dispatch)
    D.registry.impl(op, K.Autocast, layer("Autocast"), with_keys=True)
    D.registry.impl(op, K.Autograd, layer("Autograd"), with_keys=True)
    D.registry.impl(op, K.CPU, numpy_kernel(lambda x: 2 * x))
    keys = D.keyset(K.CPU, K.ADInplaceOrView, K.Autograd, K.Autocast)
    out = R.run_dispatch(op, keys, (mk.ones(2),), {})
    assert out.tolist() == [2.0, 2.0]
    assert [name for name, _ in seen] == ["Autocast", "Autograd"]
    assert seen[0][1] == keys.below(K.Autocast) and seen[1][1] == keys.below(K.Autograd)


@pytest.mark.exercise("9.2")
def test_run_dispatch_skips_fallthrough(make):
    op = make("test09::g(Tensor x) -> Tensor")
    D.registry.impl(op, K.CPU, numpy_kernel(lambda x: x + 1))
    D.registry.impl_fallthrough(op, K.Autograd)
    keys = D.keyset(K.CPU, K.Python, K.ADInplaceOrView, K.Autograd, K.Autocast)
    with D.exclude_keys(K.Python):  # no mode: the Python fallback would just pass on
        out = R.run_dispatch(op, keys.remove(K.Python), (mk.ones(1),), {})
    assert out.tolist() == [2.0]


@pytest.mark.exercise("9.2")
def test_run_dispatch_uses_a_keys_fallback(make):
    op = make("test09::h(Tensor x) -> Tensor")
    D.registry.impl(op, K.CPU, numpy_kernel(lambda x: x * 3))
    calls = []

    def boxed(op_, keys, args, kwargs):
        calls.append((op_.name, keys, len(args)))
        return R.run_dispatch(op_, keys, args, kwargs)

    saved = D.registry._FALLBACKS[K.ADInplaceOrView]
    D.registry.fallback(K.ADInplaceOrView, boxed)
    try:
        keys = D.keyset(K.CPU, K.ADInplaceOrView, K.Autograd)
        out = R.run_dispatch(op, keys, (mk.ones(1),), {})
    finally:
        D.registry.fallback(K.ADInplaceOrView, saved)
    assert out.tolist() == [3.0] and calls == [("test09::h", D.keyset(K.CPU), 1)]


@pytest.mark.exercise("9.2")
def test_run_dispatch_refuses_like_torch_without_a_backend_kernel(make):
    op = make("test09::nokernel(Tensor x) -> Tensor")
    lib = torch.library.Library("test09", "FRAGMENT")
    lib.define("nokernel(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError) as theirs:
        torch.ops.test09.nokernel(torch.ones(1))
    ours = _refusal(lambda: R.run_dispatch(op, D.keyset(K.CPU, K.Autograd), (mk.ones(1),), {}))
    prefix = "Could not run 'test09::nokernel' with arguments from the 'CPU' backend"
    assert str(theirs.value).startswith(prefix) and str(ours).startswith(prefix)
    _refusal(lambda: R.run_dispatch(op, D.DispatchKeySet(), (mk.ones(1),), {}), RuntimeError)


@pytest.mark.exercise("9.2")
def test_a_wrapper_key_without_kernel_or_fallback_is_refused(make):
    """Like torch: a key that has neither a kernel nor a fallback is an error, not a silent skip."""
    op = make("test09::nowrapper(Tensor x) -> Tensor")
    D.registry.impl(op, K.CPU, numpy_kernel(lambda x: x))
    saved = D.registry.deregister_fallback(K.Autocast)
    try:
        err = _refusal(lambda: R.run_dispatch(op, D.keyset(K.CPU, K.Autocast), (mk.ones(1),), {}))
        assert "'Autocast' backend" in str(err)
    finally:
        D.registry.fallback(K.Autocast, saved)


@pytest.mark.exercise("9.2")
@settings(max_examples=40, deadline=None)
@given(registered=st.sets(st.sampled_from(WRAPPERS)), fallthrough=st.sets(st.sampled_from(WRAPPERS)),
       backend=st.sampled_from([K.CPU, K.Meta]))
def test_run_dispatch_is_the_dispatchers(registered, fallthrough, backend):
    scratch = Scratch()
    try:
        op = scratch("test09::any(Tensor x) -> Tensor")
        seen = {"mine": [], "library": []}
        which = {"loop": "mine"}

        def loop(op_, keys, args, kwargs):
            if which["loop"] == "mine":
                return R.run_dispatch(op_, keys, args, kwargs)
            return D.redispatch(op_, keys, *args, **kwargs)

        for key in registered:
            def kernel(keys, x, _k=key):
                seen[which["loop"]].append(_k)
                return loop(op, keys, (x,), {})
            D.registry.impl(op, key, kernel, with_keys=True)
        for key in fallthrough - registered:
            D.registry.impl_fallthrough(op, key)
        D.registry.impl(op, backend, lambda x: ("backend", backend))
        keys = D.keyset(backend, *WRAPPERS) - D.keyset(K.Python)
        results = {}
        for name in ("mine", "library"):
            which["loop"] = name
            results[name] = loop(op, keys, (mk.ones(1),), {})
        assert results["mine"] == results["library"] == ("backend", backend)
        assert seen["mine"] == seen["library"]
    finally:
        scratch.close()


# ------------------------------------------------------------------ 9.3
@pytest.fixture
def my_fallback():
    """The Python key's fallback is yours while the test runs."""
    saved = D.registry._FALLBACKS[K.Python]
    D.registry.fallback(K.Python, R.mode_fallback)
    yield
    D.registry.fallback(K.Python, saved)


class _Log(D.DispatchMode):
    def __init__(self, name, log):
        self.name, self.log = name, log

    def __dispatch__(self, op, args, kwargs):
        self.log.append((self.name, op.name.split("::")[1]))
        return op(*args, **kwargs)


class _TorchLog(TorchDispatchMode):
    def __init__(self, name, log):
        super().__init__()
        self.name, self.log = name, log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append((self.name, func.overloadpacket.__name__))
        return func(*args, **(kwargs or {}))


def _op_add(make):
    op = make("test09::add(Tensor self, Tensor other) -> Tensor")
    D.registry.impl(op, K.CPU, numpy_kernel(np.add))
    return op


@pytest.mark.exercise("9.3")
def test_a_mode_sees_each_call_once_and_its_result_is_returned(make, my_fallback):
    op = _op_add(make)
    log = []
    a = mk.ones(2)  # made outside the mode, like torch's t: a factory call is dispatched too
    with _Log("m", log):
        out = op(a, a)
    assert out.tolist() == [2.0, 2.0] and log == [("m", "add")]
    t, their_log = torch.ones(2), []
    with _TorchLog("m", their_log):
        torch.add(t, t)
    assert their_log == log


@pytest.mark.exercise("9.3")
def test_nested_modes_see_the_call_in_torchs_order(make, my_fallback):
    op = _op_add(make)
    ours, theirs = [], []
    a = mk.ones(1)
    with _Log("outer", ours), _Log("inner", ours):
        op(a, a)
    t = torch.ones(1)
    with _TorchLog("outer", theirs), _TorchLog("inner", theirs):
        torch.add(t, t)
    assert ours == theirs == [("inner", "add"), ("outer", "add")]


@pytest.mark.exercise("9.3")
def test_the_mode_call_goes_on_below_python(make, my_fallback):
    """Autograd already ran: the mode's own call must not go through it again."""
    op = _op_add(make)
    autograd_runs = []

    def autograd(keys, a, b):
        autograd_runs.append(1)
        return D.redispatch(op, keys, a, b)

    D.registry.impl(op, K.Autograd, autograd, with_keys=True)
    with _Log("m", []):
        op(mk.ones(1), mk.ones(1))
    assert autograd_runs == [1]


@pytest.mark.exercise("9.3")
def test_state_is_restored_after_a_call_and_after_an_error(make, my_fallback):
    op = _op_add(make)

    class Boom(D.DispatchMode):
        def __dispatch__(self, op_, args, kwargs):
            raise ValueError("boom")

    mode = _Log("m", [])
    with mode:
        before = (D.local_include(), D.local_exclude(), list(state.mode_stack()))
        op(mk.ones(1), mk.ones(1))
        assert (D.local_include(), D.local_exclude(), list(state.mode_stack())) == before
        with Boom():
            inner_before = (D.local_include(), D.local_exclude(), list(state.mode_stack()))
            with pytest.raises(ValueError, match="boom"):
                op(mk.ones(1), mk.ones(1))
            assert (D.local_include(), D.local_exclude(), list(state.mode_stack())) == inner_before


@pytest.mark.exercise("9.3")
def test_without_a_mode_the_call_passes_on(make, my_fallback):
    op = _op_add(make)
    out = R.mode_fallback(op, D.keyset(K.CPU), (mk.ones(1), mk.ones(1)), {})
    assert out.tolist() == [2.0]


# ------------------------------------------------------------------ 9.4
@torch.library.custom_op("test09::tsin", mutates_args=())
def _torch_sin(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.sin(x.numpy()))


def _torch_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _torch_backward(ctx, grad):
    x, = ctx.saved_tensors
    return grad * torch.from_numpy(np.cos(x.numpy()))


_torch_sin.register_autograd(_torch_backward, setup_context=_torch_setup)

_setup_calls = []


@library.custom_op("test09::mksin", mutates_args=())
def _mk_sin(x: mk.Tensor) -> mk.Tensor:
    return mk.tensor(np.sin(x.to_numpy()))


def _mk_setup(ctx, inputs, output):
    _setup_calls.append((len(inputs), tuple(output.shape)))
    ctx.save_for_backward(inputs[0])


def _mk_backward(ctx, grad):
    x, = ctx.saved_tensors
    return grad * mk.tensor(np.cos(x.to_numpy()))


_mk_sin.register_autograd(_mk_backward, setup_context=_mk_setup)


@library.custom_op("test09::mkscale", mutates_args=())
def _mk_scale(x: mk.Tensor, y: mk.Tensor, k: float = 2.0) -> mk.Tensor:
    return mk.tensor(k * x.to_numpy() * y.to_numpy())


def _scale_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.k = inputs[2]


def _scale_backward(ctx, grad):
    x, y = ctx.saved_tensors
    g = grad.to_numpy()
    return mk.tensor(ctx.k * g * y.to_numpy()), mk.tensor(ctx.k * g * x.to_numpy()), None


_mk_scale.register_autograd(_scale_backward, setup_context=_scale_setup)


@pytest.mark.exercise("9.4")
@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.floats(-3, 3), min_size=1, max_size=6))
def test_custom_op_gradient_is_torchs(values):
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    _torch_sin(t).sum().backward()
    x = mk.tensor(np.array(values), dtype=mk.float64, requires_grad=True)
    _setup_calls.clear()
    y = _mk_sin(x)
    assert _setup_calls == [(1, (len(values),))]
    np.testing.assert_allclose(y.to_numpy(), _torch_sin(t.detach()).numpy())
    gradient = mk.tensor(np.ones(len(values)))
    y.backward(gradient)
    np.testing.assert_allclose(x.grad.to_numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.exercise("9.4")
def test_custom_op_passes_gradcheck_like_torchs():
    values = np.array([[0.3, -1.2], [2.0, 0.7]])
    assert torch.autograd.gradcheck(_torch_sin, (torch.tensor(values, requires_grad=True),))
    assert gradcheck(_mk_sin, (mk.tensor(values, requires_grad=True),))


@pytest.mark.exercise("9.4")
def test_two_inputs_and_a_number():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (3.0 * ta * tb).sum().backward()
    x, y = mk.tensor(a, requires_grad=True), mk.tensor(b, requires_grad=True)
    _mk_scale(x, y, 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.to_numpy(), ta.grad.numpy())
    np.testing.assert_allclose(y.grad.to_numpy(), tb.grad.numpy())
    assert gradcheck(lambda p, q: _mk_scale(p, q, 0.5), (x.detach().requires_grad_(), y.detach().requires_grad_()))


@pytest.mark.exercise("9.4")
def test_one_node_per_call_and_none_without_grad():
    x = mk.tensor([0.5], requires_grad=True)
    with D.trace() as steps:
        y = _mk_sin(x)
    assert y.grad_fn is not None and [s.key for s in steps if s.how == "kernel"] == ["Autograd", "CPU"]
    with mk.no_grad():
        assert _mk_sin(x).grad_fn is None


@pytest.mark.exercise("9.4")
def test_a_backward_with_the_wrong_count_is_refused(make):
    op = library.custom_op("test09::bad", lambda x: x.clone(), schema="(Tensor x) -> Tensor")
    make.names.append("test09::bad")
    library.register_autograd(op, lambda ctx, g: (g, g))
    y = op(mk.tensor([1.0], requires_grad=True))
    message = str(_refusal(lambda: y.sum().backward(), RuntimeError))
    assert re.search(r"(?<![\d.])1(?![\d.])", message), f"say how many gradients backward must return (1): {message!r}"
    three = library.custom_op("test09::bad3", lambda x, y, z: x.clone(), schema="(Tensor x, Tensor y, Tensor z) -> Tensor")
    make.names.append("test09::bad3")
    library.register_autograd(three, lambda ctx, g: (g, g))
    y = three(*(mk.tensor([1.0], requires_grad=True) for _ in range(3)))
    message = str(_refusal(lambda: y.sum().backward(), RuntimeError))
    assert re.search(r"(?<![\d.])3(?![\d.])", message), f"say how many gradients backward must return (3): {message!r}"
