"""Reference solutions for exercises 9.1–9.3 (``minikernel/dispatch/rebuild.py``)."""
from __future__ import annotations

from typing import Any

import minikernel.dispatch.rebuild as mine
from minikernel.dispatch import registry, state
from minikernel.dispatch.keys import DispatchKey, DispatchKeySet, keyset
from minikernel.dispatch.registry import FALLTHROUGH, Operator


def compute_keys(op: Operator, args: tuple, kwargs: dict) -> DispatchKeySet:
    keys = DispatchKeySet()
    for t in op.schema.tensor_arguments(args, kwargs):
        method = getattr(t, "_dispatch_keys", None)
        if callable(method):
            keys = keys | method()
    if not keys:
        keys = keyset(DispatchKey.BackendSelect, DispatchKey.CPU)
    return (keys | state.local_include()) - state.local_exclude()


def run_dispatch(op: Operator, keys: DispatchKeySet, args: tuple, kwargs: dict) -> Any:
    while keys:
        key = keys.highest()
        kernel, _how = registry.lookup(op, key)
        if kernel is FALLTHROUGH:
            keys = keys.remove(key)
            continue
        if kernel is None:
            raise NotImplementedError(f"Could not run '{op.name}' with arguments from the '{key.name}' "
                                      f"backend: no kernel and no fallback is registered there")
        return kernel.call(op, keys.below(key), args, kwargs)
    raise RuntimeError(f"{op.name}: no dispatch key left")


def mode_fallback(op: Operator, keys: DispatchKeySet, args: tuple, kwargs: dict) -> Any:
    stack = state.mode_stack()
    if not stack:
        return mine.run_dispatch(op, keys, args, kwargs)
    mode = stack.pop()
    saved = state._TLS.include, state._TLS.exclude
    python = keyset(DispatchKey.Python)
    above = DispatchKeySet([k for k in DispatchKey if k > DispatchKey.Python])
    inner = python if stack else DispatchKeySet()
    state._TLS.include = (saved[0] - python) | inner
    state._TLS.exclude = (saved[1] | above) - inner
    try:
        return mode.__dispatch__(op, args, kwargs)
    finally:
        state._TLS.include, state._TLS.exclude = saved
        stack.append(mode)
