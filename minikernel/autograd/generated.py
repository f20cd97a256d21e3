"""The autograd nodes of operators whose backward formula is declared in
``aten/native_functions.py`` (a ``Derivative``), made here the way PyTorch generates
``SqrtBackward0`` from ``derivatives.yaml``.

The forward computes on the backend (``values.compute``: the dispatcher below Autograd)
and saves exactly what the formulas' parameters name (``self``, ``result``, the other
inputs); backward calls each formula with ``grad`` and those values. Formulas are
written with Tensor operators, so with ``create_graph=True`` they are recorded too.
"""
from __future__ import annotations

import inspect
from typing import Callable

from ..aten.native_functions import Derivative, NativeFunction
from . import values as V
from .function import Function


def _parameters(formula: Callable) -> tuple[str, ...]:
    return tuple(inspect.signature(formula).parameters)


def derivative_function(native: NativeFunction) -> type[Function]:
    """The ``Function`` of ``native``'s ``Derivative``: a node named as torch names it."""
    derivative = native.autograd
    if not isinstance(derivative, Derivative):
        raise TypeError(f"aten::{native.name} declares no Derivative (autograd={derivative!r})")
    inputs = tuple(a.name for a in native.schema.arguments)
    unknown = {f for f in derivative.formulas if f not in inputs}
    if unknown:
        raise ValueError(f"aten::{native.name}'s Derivative gives formulas for {sorted(unknown)}, which are not "
                         f"inputs of {native.func}; name them after the schema's arguments {list(inputs)}")
    used = {p for f in derivative.formulas.values() for p in _parameters(f)} - {"grad"}
    bad = used - set(inputs) - {"result"}
    if bad:
        raise ValueError(f"aten::{native.name}'s Derivative formulas use {sorted(bad)}; a formula's parameters are "
                         f"grad, result and the inputs {list(inputs)}")
    saved = tuple(n for n in (*inputs, "result") if n in used)  # what the node keeps, in a fixed order

    def forward(ctx, *args):
        result = V.compute(native.name, *args)
        values = dict(zip(inputs, args), result=result)
        ctx.save_for_backward(*(values[n] for n in saved))
        return result

    def backward(ctx, grad):
        values = dict(zip(saved, ctx.saved_tensors), grad=grad)
        return tuple(derivative.formulas[n](**{p: values[p] for p in _parameters(derivative.formulas[n])})
                     if n in derivative.formulas and ctx.needs_input_grad[i] else None
                     for i, n in enumerate(inputs))

    name = derivative.node.removesuffix("Backward0").removesuffix("Backward")
    return type(name, (Function,), {"_torch_name": derivative.node, "__module__": __name__,
                                    "__doc__": f"aten::{native.name}'s node, from its declared Derivative.",
                                    "forward": staticmethod(forward), "backward": staticmethod(backward)})
