"""The dispatch loop: from a call's arguments to the kernel that runs.

For ``op(*args)`` PyTorch's dispatcher

1. computes the call's key set: the union of its tensor arguments' key sets, plus
   the thread-local include set, minus the thread-local exclude set;
2. looks up the highest key's kernel in ``op``'s table (or that key's fallback);
   a *fallthrough* kernel means "skip me": the next key is tried;
3. calls it. A kernel that wraps another layer (autograd, autocast, a mode) does its
   part, then *redispatches*: it calls the same op again with the keys below its own,
   so the next layer runs — down to the backend kernel, which computes.

``trace()`` records each step, for the chapter's dispatch-trace view.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from . import registry, state
from .keys import DispatchKey, DispatchKeySet, keyset
from .registry import FALLTHROUGH, Operator


@dataclass(frozen=True)
class Step:
    """One step of a call: ``op`` reached ``key``; ``how`` is "kernel", "fallback" or "fallthrough"."""

    op: str
    key: str
    kernel: str
    how: str
    depth: int

    def __str__(self) -> str:
        return f"{'  ' * self.depth}{self.op} @ {self.key}: {self.kernel} ({self.how})"


class _Tracer:
    def __init__(self) -> None:
        self.steps: Optional[list[Step]] = None
        self.depth = 0


_TRACE = _Tracer()


@contextmanager
def trace() -> Iterator[list[Step]]:
    """Record every dispatch step inside the block into the yielded list.

    Example::

        >>> with trace() as steps:
        ...     a + b
        >>> [str(s) for s in steps]
        ['aten::add @ Autograd: ... (kernel)', '  aten::add @ CPU: ops.add (kernel)']
    """
    saved = _TRACE.steps, _TRACE.depth
    _TRACE.steps, _TRACE.depth = [], 0
    try:
        yield _TRACE.steps
    finally:
        _TRACE.steps, _TRACE.depth = saved


def _record(op: Operator, key: DispatchKey, kernel: Any, how: str) -> None:
    if _TRACE.steps is not None:
        name = repr(kernel) if kernel is FALLTHROUGH else kernel.name
        _TRACE.steps.append(Step(op.name, key.name, name, how, _TRACE.depth))


def keys_of(value: Any) -> DispatchKeySet:
    """A tensor's own key set (``torch._C._dispatch_keys(t)``); empty for anything else."""
    method = getattr(value, "_dispatch_keys", None)
    return method() if callable(method) else DispatchKeySet()


_FACTORY = keyset(DispatchKey.BackendSelect, DispatchKey.CPU)


def compute_keys(op: Operator, args: tuple, kwargs: dict) -> DispatchKeySet:
    """The call's key set: union of the tensor arguments' keys, plus local include, minus local exclude.

    A call without tensor arguments (a factory function) goes to ``BackendSelect``
    and the CPU backend, as in PyTorch.
    """
    bits = 0
    for t in op.schema.tensor_arguments(args, kwargs):
        for one in (t if isinstance(t, (list, tuple)) else (t,)):  # a Tensor[] argument: every tensor in it
            bits |= keys_of(one).bits
    if not bits:
        bits = _FACTORY.bits
    return DispatchKeySet(bits=(bits | state.local_include().bits) & ~state.local_exclude().bits)


def call(op: Operator, *args: Any, **kwargs: Any) -> Any:
    """Dispatch ``op(*args, **kwargs)`` from the top: compute the keys, run the highest key's kernel."""
    return redispatch(op, compute_keys(op, args, kwargs), *args, **kwargs)


def redispatch(op: Operator, keys: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
    """Run ``op`` on the given keys: the highest key with a kernel that isn't fallthrough.

    A kernel receives (if registered ``with_keys``) the keys *below* its own, to
    redispatch to the next layer: ``redispatch(op, keys, *args)``.
    """
    while keys:
        key = keys.highest()
        kernel, how = registry.lookup(op, key)
        if kernel is FALLTHROUGH:
            _record(op, key, kernel, "fallthrough")
            keys = keys.remove(key)
            continue
        if kernel is None:  # wrapper keys all have fallbacks (modes.install_default_fallbacks)
            raise NotImplementedError(
                f"Could not run '{op.name}' with arguments from the '{key.name}' backend: no kernel is "
                f"registered for {op.name} at {key.name} and {key.name} has no fallback (registered: "
                f"{', '.join(op.table()) or 'none'}). Register one with minikernel.library.impl")
        _record(op, key, kernel, how)
        _TRACE.depth += 1
        try:
            return kernel.call(op, keys.below(key), args, kwargs)
        finally:
            _TRACE.depth -= 1
    raise RuntimeError(f"{op.name}: no dispatch key left (every key was excluded or fell through); "
                       "did a kernel redispatch without a backend key?")


registry._CALL[0] = call
