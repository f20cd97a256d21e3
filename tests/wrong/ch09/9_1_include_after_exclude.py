"""Exclude is applied before include: a key both included and excluded stays in."""
from __future__ import annotations

from minikernel.dispatch import state
from minikernel.dispatch.keys import DispatchKey, DispatchKeySet, keyset

EXERCISE = "9.1"


def compute_keys(op, args, kwargs):
    keys = DispatchKeySet()
    for t in op.schema.tensor_arguments(args, kwargs):
        keys = keys | t._dispatch_keys()
    if not keys:
        keys = keyset(DispatchKey.BackendSelect, DispatchKey.CPU)
    return (keys - state.local_exclude()) | state.local_include()
