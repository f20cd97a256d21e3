"""The factory default is applied after include/exclude: an included key hides it, an excluded tensor gets it."""
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
    keys = (keys | state.local_include()) - state.local_exclude()
    if not keys:
        keys = keyset(DispatchKey.BackendSelect, DispatchKey.CPU)
    return keys
