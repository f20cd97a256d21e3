"""The outermost mode is taken from the stack, not the innermost: nested modes see calls in reverse."""
from __future__ import annotations

import minikernel.dispatch.rebuild as mine
from minikernel.dispatch import state
from minikernel.dispatch.keys import DispatchKey, DispatchKeySet, keyset

EXERCISE = "9.3"


def mode_fallback(op, keys, args, kwargs):
    stack = state.mode_stack()
    if not stack:
        return mine.run_dispatch(op, keys, args, kwargs)
    mode = stack.pop(0)
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
        stack.insert(0, mode)
