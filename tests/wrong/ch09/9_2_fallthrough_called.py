"""The fallthrough marker is treated like a kernel and called, instead of skipping the key."""
from __future__ import annotations

from minikernel.dispatch import registry
from minikernel.dispatch.keys import BACKENDS

EXERCISE = "9.2"


def run_dispatch(op, keys, args, kwargs):
    while keys:
        key = keys.highest()
        kernel, _how = registry.lookup(op, key)
        if kernel is None:
            if key in BACKENDS:
                raise NotImplementedError(f"Could not run '{op.name}' with arguments from the '{key.name}' backend")
            keys = keys.remove(key)
            continue
        return kernel.call(op, keys.below(key), args, kwargs)
    raise RuntimeError(f"{op.name}: no dispatch key left")
