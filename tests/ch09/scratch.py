"""Throw-away operators for chapter 09's tests: defined per test, removed after."""
from __future__ import annotations

import numpy as np

import minikernel as mk
from minikernel import dispatch as D


class Scratch:
    """``make(schema)`` defines an operator that is removed at teardown."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, schema: str) -> D.Operator:
        op = D.registry.define(schema)
        self.names.append(op.name)
        return op

    def close(self) -> None:
        for name in self.names:
            D.registry.undefine(name)


def numpy_kernel(fn):
    """A CPU kernel computing ``fn`` with numpy (independent of chapter 02's kernels)."""
    def kernel(*args):
        values = [a.to_numpy() if isinstance(a, mk.Tensor) else a for a in args]
        return mk.tensor(np.asarray(fn(*values)))
    kernel.__qualname__ = f"numpy {getattr(fn, '__name__', 'kernel')}"
    return kernel
