"""Dispatch modes: a Python object that sees every operator call (``TorchDispatchMode``).

Entering a mode pushes it on the thread's mode stack and adds the ``Python`` key
to the local include set. The ``Python`` key's entry in every operator's table is one
boxed fallback, PyTorch's ``pythonFallback``: it takes the innermost mode off the
stack while the mode runs (``_pop_mode_temporarily``, as torch's
``torch.utils._python_dispatch`` does; the ``Python`` key stays included only while a
mode is left on the stack, as in torch's ``TorchDispatchModeTLS``) and excludes the
keys above ``Python``, which already ran, so that when the mode calls ``op(*args)``
again the call goes on below. The ``Python`` key sits *below* ``Autograd`` (PyTorch's
order too): a mode sees the ops autograd calls, including those of the backward
pass, not the user's calls.

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

from contextlib import contextmanager
from typing import Any, Iterator

from . import registry, state
from .dispatcher import redispatch
from .keys import DispatchKey, DispatchKeySet
from .registry import FALLTHROUGH, Operator

#: the keys of higher priority than Python: already done when the mode runs
_ABOVE_PYTHON = tuple(k for k in DispatchKey if k > DispatchKey.Python)


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


@contextmanager
def _pop_mode_temporarily() -> Iterator[DispatchMode]:
    """The innermost mode, off the stack inside the block (``torch.utils._python_dispatch``'s
    ``_pop_mode_temporarily``); with the stack empty, the ``Python`` key is no longer included."""
    stack = state.mode_stack()
    mode, included = stack.pop(), state._TLS.include
    if not stack:
        state._TLS.include = included.remove(DispatchKey.Python)
    try:
        yield mode
    finally:
        state._TLS.include = included
        stack.append(mode)


def _dispatch_to_mode(op: Operator, keys: DispatchKeySet, args: tuple, kwargs: dict) -> Any:
    """The ``Python`` key's fallback (torch's ``pythonFallback``): the innermost mode's ``__dispatch__``,
    below the keys that already ran; without a mode (a ``Python`` key left in a key set) the call goes on."""
    if not state.mode_stack():
        return redispatch(op, keys, *args, **kwargs)
    with _pop_mode_temporarily() as mode, state.exclude_keys(*_ABOVE_PYTHON):
        return mode.__dispatch__(op, args, kwargs)


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
    registry.fallback(DispatchKey.Python, _dispatch_to_mode, name="the innermost mode's __dispatch__")
    for key in (DispatchKey.BackendSelect, DispatchKey.ADInplaceOrView, DispatchKey.Autocast,
                DispatchKey.Autograd):
        registry.fallback(key, FALLTHROUGH)
