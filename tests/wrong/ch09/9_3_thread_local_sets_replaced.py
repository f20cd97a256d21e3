"""The mode's thread-local sets replace the caller's instead of adding to them: an excluded key comes back."""
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
    saved = state._TLS.include, state._TLS.exclude
    python = keyset(DispatchKey.Python)
    above = DispatchKeySet([k for k in DispatchKey if k > DispatchKey.Python])
    inner = python if stack else DispatchKeySet()
    state._TLS.include = inner
    state._TLS.exclude = above - inner
    try:
        return mode.__dispatch__(op, args, kwargs)
    finally:
        state._TLS.include, state._TLS.exclude = saved
        stack.append(mode)
