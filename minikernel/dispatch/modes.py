"""Dispatch modes: a Python object that sees every operator call (``TorchDispatchMode``).

Entering a mode pushes it on the thread's mode stack and adds the ``Python`` key
to the local include set. The ``Python`` key's boxed fallback — one kernel for
every op — pops the innermost mode and calls its ``__dispatch__(op, args,
kwargs)`` with the keys above ``Python`` excluded, so that when the mode calls
``op(*args)`` again the call goes straight on to the backend. The ``Python`` key
sits *below* ``Autograd`` (PyTorch's order too): a mode sees the ops autograd
calls, including those of the backward pass, not the user's calls.

Example::

    >>> class Log(DispatchMode):
    ...     def __dispatch__(self, op, args, kwargs):
    ...         print(op.name)
    ...         return op(*args, **kwargs)
    >>> with Log():
    ...     a + b
    aten::add
"""
from __future__ import annotations

from typing import Any

from . import registry, state
from .dispatcher import redispatch
from .keys import DispatchKey, DispatchKeySet, keyset
from .registry import FALLTHROUGH, Operator

#: the keys of higher priority than Python: already done when the mode runs
_ABOVE_PYTHON = DispatchKeySet([k for k in DispatchKey if k > DispatchKey.Python])


class DispatchMode:
    """Base class: override ``__dispatch__(op, args, kwargs)``; use as a context manager."""

    def __dispatch__(self, op: Operator, args: tuple, kwargs: dict) -> Any:
        return op(*args, **kwargs)

    def __enter__(self) -> "DispatchMode":
        state.mode_stack().append(self)
        self._saved = state.local_include(), state.local_exclude()
        state._TLS.include = self._saved[0].add(DispatchKey.Python)
        state._TLS.exclude = self._saved[1].remove(DispatchKey.Python)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = state.mode_stack()
        if not stack or stack[-1] is not self:
            raise RuntimeError("dispatch modes must be exited in the reverse order they were entered")
        stack.pop()
        state._TLS.include, state._TLS.exclude = self._saved


def python_fallback(op: Operator, keys: DispatchKeySet, args: tuple, kwargs: dict) -> Any:
    """The ``Python`` key's boxed fallback: hand the call to the innermost mode, which runs with itself popped."""
    stack = state.mode_stack()
    if not stack:  # a Python key without a mode (left in a key set): nothing to do here
        return redispatch(op, keys, *args, **kwargs)
    mode = stack.pop()
    saved = state.local_include(), state.local_exclude()
    inner = keyset(DispatchKey.Python) if stack else DispatchKeySet()
    state._TLS.include = (saved[0] - keyset(DispatchKey.Python)) | inner
    state._TLS.exclude = (saved[1] | _ABOVE_PYTHON) - inner
    try:
        return mode.__dispatch__(op, args, kwargs)
    finally:
        state._TLS.include, state._TLS.exclude = saved
        stack.append(mode)


class LoggingMode(DispatchMode):
    """A mode that appends ``(op name, argument shapes)`` to ``self.log`` and runs the op."""

    def __init__(self) -> None:
        self.log: list[tuple[str, tuple]] = []

    def __dispatch__(self, op: Operator, args: tuple, kwargs: dict) -> Any:
        shapes = tuple(tuple(a.shape) if hasattr(a, "shape") else a for a in args)
        self.log.append((op.name, shapes))
        return op(*args, **kwargs)


def install_default_fallbacks() -> None:
    """The fallbacks every key gets: Python → the mode; the wrapper layers → fallthrough."""
    registry.fallback(DispatchKey.Python, python_fallback, name="python_fallback (the mode's __dispatch__)")
    for key in (DispatchKey.BackendSelect, DispatchKey.ADInplaceOrView, DispatchKey.Autocast,
                DispatchKey.Autograd):
        registry.fallback(key, FALLTHROUGH)
