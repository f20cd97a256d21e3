"""Exercises 9.1–9.3 against the library's computed dispatch tables: the same answers on every
registered operator, for every key set, with and without thread-local keys and modes.

The library does not contain 9.1–9.3 (``test_no_exercise_in_library.py``): it computes each
operator's table when kernels and fallbacks are registered and indexes it by the highest
key at call time, as torch does. The exercises interpret the same semantics step by step.
Oracles: the library (``Operator.key_extractor``, ``Operator.kernel_for`` and its ``Python``
fallback), and through it torch's tables (``test_table.py``).
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Iterator

import pytest
from hypothesis import given, settings, strategies as st

from minikernel import dispatch as D
from minikernel.course.exercise import stub_exercise_id
from minikernel.dispatch import DispatchKey as K, agreement, rebuild as R, state

from .scratch import Scratch

KEY_SETS = st.sets(st.sampled_from(list(K)))
CPU_TENSOR = (K.CPU, K.ADInplaceOrView, K.Autograd, K.Autocast)


class _Keyed:
    """A stand-in tensor: anything with ``_dispatch_keys`` brings its keys to a call."""

    def __init__(self, keys) -> None:
        self.keys = D.keyset(*keys)

    def _dispatch_keys(self) -> D.DispatchKeySet:
        return self.keys

    def __repr__(self) -> str:
        return f"<tensor {self.keys}>"


def _operators() -> list[D.Operator]:
    return sorted(D.registry.operators().values(), key=lambda op: op.name)


def _arguments(op: D.Operator, tensors: list) -> tuple:
    """Positional arguments for ``op``: the next of ``tensors`` for each ``Tensor``/``Tensor?``
    argument, an empty list for a ``Tensor[]`` (9.1 reads single tensors only), 0 for the rest."""
    values, given = [], iter(tensors * 4)
    for a in op.schema.arguments:
        if a.kwarg_only:
            break
        values.append([] if a.type == "Tensor[]" else next(given) if a.type in ("Tensor", "Tensor?") else 0)
    return tuple(values)


@contextmanager
def _thread_state(include, exclude, modes: int) -> Iterator[None]:
    with ExitStack() as stack:
        stack.enter_context(D.include_keys(*include))
        stack.enter_context(D.exclude_keys(*exclude))
        for _ in range(modes):
            stack.enter_context(D.DispatchMode())
        yield


# ------------------------------------------------------------------ 9.1
@pytest.mark.exercise("9.1")
@settings(max_examples=40, deadline=None)
@given(tensor_keys=st.lists(KEY_SETS, min_size=3, max_size=3), optional_none=st.booleans(),
       number_for_tensor=st.booleans(), by_name=st.booleans(),
       include=KEY_SETS, exclude=KEY_SETS, modes=st.integers(0, 2))
def test_compute_keys_agrees_with_the_extractor_on_every_operator(tensor_keys, optional_none, number_for_tensor,
                                                                  by_name, include, exclude, modes):
    tensors = [_Keyed(keys) for keys in tensor_keys]
    if optional_none:
        tensors[1] = None
    if number_for_tensor:
        tensors[2] = 2.5
    with _thread_state(include, exclude, modes):
        for op in _operators():
            args, kwargs = _arguments(op, tensors), {}
            if by_name and not op.schema.open:
                kwargs = {a.name: v for a, v in zip(op.schema.arguments, args)}
                args = ()
            assert R.compute_keys(op, args, kwargs) == op.key_extractor.get_dispatch_key_set(args, kwargs), op.name


# ------------------------------------------------------------------ 9.2
@contextmanager
def _fallbacks(kind: str) -> Iterator[None]:
    """The backend fallbacks as registered, or changed at one key (restored afterwards)."""
    key = {"as registered": None, "no Autocast fallback": K.Autocast,
           "a boxed ADInplaceOrView fallback": K.ADInplaceOrView, "Python falls through": K.Python}[kind]
    saved = D.registry._FALLBACKS.get(key)
    try:
        if kind == "no Autocast fallback":
            D.registry.deregister_fallback(key)
        elif kind == "a boxed ADInplaceOrView fallback":
            D.registry.fallback(key, lambda op, keys, args, kwargs: "boxed", name="boxed")
        elif kind == "Python falls through":
            D.registry.fallback(key, D.FALLTHROUGH)
        yield
    finally:
        if key is not None:
            D.registry.fallback(key, saved)


@pytest.mark.exercise("9.2")
@pytest.mark.parametrize("fallbacks", ["as registered", "no Autocast fallback", "a boxed ADInplaceOrView fallback",
                                       "Python falls through"])
def test_run_dispatch_agrees_with_the_table_on_every_operator_and_key_set(fallbacks):
    """All 256 key sets, the empty one and those where every key falls through included."""
    with _fallbacks(fallbacks):
        found = agreement.disagreements(R.run_dispatch)
    assert found[:3] == [], f"{len(found)} disagreements (operator, keys, the table's, yours)"


@pytest.mark.exercise("9.2")
@settings(max_examples=40, deadline=None)
@given(kernels=KEY_SETS, fallthrough=KEY_SETS)
def test_run_dispatch_agrees_with_the_table_for_any_registrations(kernels, fallthrough):
    scratch = Scratch()
    try:
        op = scratch("test09::anyreg(Tensor x, Tensor y) -> Tensor")
        for key in kernels:
            D.registry.impl(op, key, lambda keys, x, y: None, name=f"kernel at {key.name}", with_keys=True)
        for key in fallthrough - kernels:
            D.registry.impl_fallthrough(op, key)
        found = agreement.disagreements(R.run_dispatch, ops=[op])
        assert found[:3] == [], f"{len(found)} disagreements (operator, keys, the table's, yours)"
    finally:
        scratch.close()


# ------------------------------------------------------------------ 9.3
class _Log(D.DispatchMode):
    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def __dispatch__(self, op, args, kwargs):
        self.log.append((self.name, op.name, D.local_include(), D.local_exclude(), len(state.mode_stack())))
        return op(*args, **kwargs)


def _probe(op: D.Operator, log: list) -> D.Operator:
    """An unregistered operator with ``op``'s schema and registrations, whose kernels log and go on
    (a wrapper key redispatches below, a backend returns its name); its table takes the fallbacks
    in place when it is made."""
    probe = D.Operator(op.schema)
    for key, kernel in op.kernels.items():
        if kernel is D.FALLTHROUGH:
            D.registry.impl_fallthrough(probe, key)
        elif key in D.BACKENDS:
            D.registry.impl(probe, key, lambda *a, _k=key, **kw: log.append(("backend", _k.name)) or _k.name)
        else:
            def wrapper(keys, *args, _k=key, **kwargs):
                log.append(("layer", _k.name))
                return D.redispatch(probe, keys, *args, **kwargs)
            D.registry.impl(probe, key, wrapper, with_keys=True)
    return probe


def _run_under_modes(fallback, op, include, exclude, modes: int, python_on_tensors: bool) -> tuple:
    """Everything one call of ``op`` does under ``modes`` nested logging modes with ``fallback`` at the
    Python key: what each mode and layer saw, the result, and whether the thread's state came back."""
    D.registry.fallback(K.Python, fallback)
    log = []
    probe = _probe(op, log)
    tensors = [_Keyed(CPU_TENSOR + ((K.Python,) if python_on_tensors else ()))]
    with ExitStack() as stack:
        stack.enter_context(_thread_state(include, exclude, 0))
        for i in range(modes):
            stack.enter_context(_Log(f"mode {i}", log))
        before = (D.local_include(), D.local_exclude(), list(state.mode_stack()))
        try:
            result = probe(*_arguments(op, tensors))
        except (NotImplementedError, RuntimeError) as err:
            if stub_exercise_id(err):
                raise
            result = agreement.refusal(err)
        restored = before == (D.local_include(), D.local_exclude(), list(state.mode_stack()))
    return log, result, restored


@pytest.mark.exercise("9.3")
@settings(max_examples=25, deadline=None)
@given(include=KEY_SETS, exclude=KEY_SETS, modes=st.integers(0, 2), python_on_tensors=st.booleans())
def test_mode_fallback_agrees_with_the_librarys_on_every_operator(include, exclude, modes, python_on_tensors):
    library = D.registry._FALLBACKS[K.Python]
    try:
        for op in _operators():
            theirs = _run_under_modes(library, op, include, exclude, modes, python_on_tensors)
            ours = _run_under_modes(R.mode_fallback, op, include, exclude, modes, python_on_tensors)
            assert ours == theirs, op.name
            assert theirs[2], f"{op.name}: the library's fallback did not restore the thread's state"
    finally:
        D.registry.fallback(K.Python, library)
