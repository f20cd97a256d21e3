"""A key with no kernel and no fallback raises RuntimeError instead of NotImplementedError."""
from __future__ import annotations

from minikernel.dispatch import registry
from minikernel.dispatch.registry import FALLTHROUGH

EXERCISE = "9.2"


def run_dispatch(op, keys, args, kwargs):
    while keys:
        key = keys.highest()
        kernel, _how = registry.lookup(op, key)
        if kernel is FALLTHROUGH:
            keys = keys.remove(key)
            continue
        if kernel is None:
            raise RuntimeError(f"Could not run '{op.name}' with arguments from the '{key.name}' "
                               f"backend: no kernel and no fallback is registered there")
        return kernel.call(op, keys.below(key), args, kwargs)
    raise RuntimeError(f"{op.name}: no dispatch key left")
