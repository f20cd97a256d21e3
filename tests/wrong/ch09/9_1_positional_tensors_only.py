"""Only the positional arguments are looked at: a tensor passed by keyword adds no key."""
from __future__ import annotations

from minikernel.dispatch import state
from minikernel.dispatch.keys import DispatchKey, DispatchKeySet, keyset

EXERCISE = "9.1"


def compute_keys(op, args, kwargs):
    keys = DispatchKeySet()
    for t in args:
        method = getattr(t, "_dispatch_keys", None)
        if callable(method):
            keys = keys | method()
    if not keys:
        keys = keyset(DispatchKey.BackendSelect, DispatchKey.CPU)
    return (keys | state.local_include()) - state.local_exclude()
