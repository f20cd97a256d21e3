"""Only the exclude set is put back after the mode ran: the include set the mode's call saw stays."""
from __future__ import annotations

import minikernel.dispatch.rebuild as mine
from minikernel.dispatch import state
from minikernel.dispatch.keys import DispatchKey, DispatchKeySet, keyset

EXERCISE = "9.3"


def mode_fallback(op, keys, args, kwargs):
    stack = state.mode_stack()
    if not stack:
        return mine.run_dispatch(op, keys, args, kwargs)
    mode = stack.pop()
    saved_include, saved_exclude = state._TLS.include, state._TLS.exclude
    python = keyset(DispatchKey.Python)
    above = DispatchKeySet([k for k in DispatchKey if k > DispatchKey.Python])
    inner = python if stack else DispatchKeySet()
    state._TLS.include = (saved_include - python) | inner
    state._TLS.exclude = (saved_exclude | above) - inner
    try:
        return mode.__dispatch__(op, args, kwargs)
    finally:
        state._TLS.exclude = saved_exclude
        stack.append(mode)
