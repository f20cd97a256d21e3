"""From a call's arguments to the kernel that runs: a table lookup.

For ``op(*args)`` PyTorch's dispatcher (``Dispatcher::call``)

1. asks the op's ``DispatchKeyExtractor`` for the call's key set: the OR of its tensor
   arguments' key sets, with the thread-local include and exclude sets applied
   (``extractor.py``);
2. indexes the op's dispatch table with the highest key of that set, once the keys
   whose entry is fallthrough are masked out (``Operator.kernel_for``). The table was
   computed when the kernels and fallbacks were registered (``registry.py``), so
   nothing is searched at call time;
3. calls that entry. A kernel that wraps another layer (autograd, autocast, a mode)
   does its part, then *redispatches*: it calls the same op with the keys below its
   own (``redispatch``: no argument is read again, the table is indexed again).

``trace()`` records each step, for the chapter's dispatch-trace view: the entry that
ran, and the fallthrough keys above it that the mask skipped.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from . import registry
from .keys import DispatchKey, DispatchKeySet
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
        ['aten::add @ Autograd: ... (kernel)', '  aten::add @ CPU: binary_ops.add (kernel)']
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


def call(op: Operator, *args: Any, **kwargs: Any) -> Any:
    """Dispatch ``op(*args, **kwargs)`` from the top (``Dispatcher::call``)."""
    return redispatch(op, op.key_extractor.get_dispatch_key_set(args, kwargs), *args, **kwargs)


def redispatch(op: Operator, keys: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
    """Run ``op``'s table entry for ``keys`` (``Dispatcher::redispatch``): the highest key that ``op``
    does not fall through.

    The kernel receives (if registered ``with_keys``) the keys *below* its own, to
    redispatch to the next layer: ``redispatch(op, keys, *args)``.
    """
    if _TRACE.steps is not None:
        return _traced(op, keys, args, kwargs)
    key, kernel = op.kernel_for(keys)
    return kernel.call(op, keys.below(key), args, kwargs)


def _traced(op: Operator, keys: DispatchKeySet, args: tuple, kwargs: dict) -> Any:
    """``redispatch``, recording the fallthrough keys skipped above the entry, then the entry."""
    live = keys.bits & op.key_extractor.non_fallthrough_keys
    for key in DispatchKeySet(bits=keys.bits >> live.bit_length() << live.bit_length()):
        _record(op, key, FALLTHROUGH, "fallthrough")
    key, kernel = op.kernel_for(keys)
    _record(op, key, kernel, op.provenance[key])
    _TRACE.depth += 1
    try:
        return kernel.call(op, keys.below(key), args, kwargs)
    finally:
        _TRACE.depth -= 1


registry._CALL[0] = call
