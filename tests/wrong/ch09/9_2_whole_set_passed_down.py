"""The kernel gets the whole key set instead of the keys below it: its redispatch comes back to itself."""
from __future__ import annotations

from minikernel.dispatch import registry
from minikernel.dispatch.keys import BACKENDS
from minikernel.dispatch.registry import FALLTHROUGH

EXERCISE = "9.2"


def run_dispatch(op, keys, args, kwargs):
    while keys:
        key = keys.highest()
        kernel, _how = registry.lookup(op, key)
        if kernel is FALLTHROUGH or (kernel is None and key not in BACKENDS):
            keys = keys.remove(key)
            continue
        if kernel is None:
            raise NotImplementedError(f"Could not run '{op.name}' with arguments from the '{key.name}' backend")
        return kernel.call(op, keys, args, kwargs)
    raise RuntimeError(f"{op.name}: no dispatch key left")
