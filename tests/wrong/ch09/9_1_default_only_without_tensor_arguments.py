"""The factory default is given only when there is no tensor argument at all, not when none of them has keys."""
from __future__ import annotations

from minikernel.dispatch import state
from minikernel.dispatch.keys import DispatchKey, DispatchKeySet, keyset

EXERCISE = "9.1"


def compute_keys(op, args, kwargs):
    tensors = op.schema.tensor_arguments(args, kwargs)
    keys = DispatchKeySet()
    for t in tensors:
        method = getattr(t, "_dispatch_keys", None)
        if callable(method):
            keys = keys | method()
    if not tensors:
        keys = keyset(DispatchKey.BackendSelect, DispatchKey.CPU)
    return (keys | state.local_include()) - state.local_exclude()
