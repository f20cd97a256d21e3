"""The thread-local include set is ignored: inside autocast the highest key is still Autograd."""
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
    if not keys:
        keys = keyset(DispatchKey.BackendSelect, DispatchKey.CPU)
    return keys - state.local_exclude()
