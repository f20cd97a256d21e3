"""A per-op trace of shapes and dtypes: what TorchSnooper printed, with a TorchFunctionMode.

Every call into ``torch`` — functions, Tensor methods, operators, and the calls inside
``nn`` modules — passes through ``__torch_function__`` before it is dispatched. A
``torch.overrides.TorchFunctionMode`` sees each of them while it is active: here it
records the name, the tensor arguments' shapes and dtypes, and the result's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten


def _describe(value: Any) -> str:
    """``float32[8, 32]`` for a tensor, ``(...)`` for a tuple of them, ``repr`` for the rest."""
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    return repr(value) if isinstance(value, (int, float, bool, type(None))) else type(value).__name__


def _name(func: Any) -> str:
    name = getattr(func, "__name__", repr(func))
    if name == "__get__":  # a property: Tensor.shape, .grad, ...
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return name


@dataclass
class TracedCall:
    """One torch call: its name, its tensor arguments and its result, described."""

    name: str
    args: list[str]
    result: str

    def __str__(self) -> str:
        return f"{self.name}({', '.join(self.args)}) -> {self.result}"


class OpTrace(TorchFunctionMode):
    """Record every torch call made while active (``with OpTrace() as trace: ...``).

    ``skip`` names calls not to record (properties such as ``dim`` or ``__get__``
    clutter a trace). The calls are in ``trace.calls``; ``print(trace)`` lists them.
    """

    def __init__(self, skip: tuple[str, ...] = ("dim", "size", "shape", "dtype", "device", "requires_grad",
                                                   "grad_fn", "is_leaf", "__get__", "__set__")):
        super().__init__()
        self.skip = set(skip)
        self.calls: list[TracedCall] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = _name(func)
        if name not in self.skip:
            tensors = [a for a in tree_flatten((args, kwargs or {}))[0] if isinstance(a, torch.Tensor)]
            self.calls.append(TracedCall(name, [_describe(t) for t in tensors], _describe(result)))
        return result

    def __str__(self) -> str:
        return "\n".join(str(call) for call in self.calls)
