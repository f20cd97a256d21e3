"""The dispatcher's thread-local state: the include and exclude key sets, and the mode stack.

PyTorch keeps, per thread, a *local include set* (keys added to every call: the
``Python`` key while a ``TorchDispatchMode`` is on) and a *local exclude set*
(keys taken out: ``Autocast`` unless ``torch.autocast`` is on, autograd's keys
inside its own kernels). ``torch._C._dispatch_tls_local_include_set()`` and
``..._exclude_set()`` print them. Context managers here change them for a block.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

from .keys import DispatchKey, DispatchKeySet, keyset


class _Local(threading.local):
    def __init__(self) -> None:
        self.include = DispatchKeySet()
        self.exclude = keyset(DispatchKey.Autocast)  # autocast is off until asked for
        self.modes: list[Any] = []


_TLS = _Local()


def local_include() -> DispatchKeySet:
    """Keys added to every call on this thread."""
    return _TLS.include


def local_exclude() -> DispatchKeySet:
    """Keys removed from every call on this thread."""
    return _TLS.exclude


@contextmanager
def include_keys(*keys: DispatchKey) -> Iterator[None]:
    """Add ``keys`` to the local include set (and take them off the exclude set) inside the block."""
    saved = _TLS.include, _TLS.exclude
    _TLS.include, _TLS.exclude = saved[0] | keyset(*keys), saved[1] - keyset(*keys)
    try:
        yield
    finally:
        _TLS.include, _TLS.exclude = saved


@contextmanager
def exclude_keys(*keys: DispatchKey) -> Iterator[None]:
    """Add ``keys`` to the local exclude set inside the block (``ExcludeDispatchKeyGuard``)."""
    saved = _TLS.exclude
    _TLS.exclude = saved | keyset(*keys)
    try:
        yield
    finally:
        _TLS.exclude = saved


def mode_stack() -> list[Any]:
    """The active dispatch modes, innermost last (the live list)."""
    return _TLS.modes
