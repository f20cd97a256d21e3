"""Tensor arithmetic: the operators and methods that compute (chapter 02 onwards), made
from their declarations in ``aten/native_functions.py`` (PyTorch generates its Python
bindings, ``python_variable_methods.cpp``, from ``native_functions.yaml`` the same way).

Each method calls its operator (``aten::add``, ...) through minikernel's dispatcher
(chapter 09): the Autograd key's kernel records the graph when autograd is involved
(chapter 03), otherwise the backend key's kernel runs its ``minikernel/aten/`` kernel — device
dispatch, dtype dispatch, checks, output allocation, then your chapter 02 kernel.
A method's parameters are the schema's, ``self`` first, with the schema's defaults:
``sum(dim=None, keepdim=False)``; ``__radd__`` swaps the operands; ``add_`` and
``__iadd__`` call the in-place variant ``aten::add_``. Mixed into ``Tensor`` (``tensor.py``).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from .aten.native_functions import GENERATED, NATIVE_FUNCTIONS, NativeFunction
from .tensor_backends import route

_P = inspect.Parameter
_REQUIRED = object()


def method(native: NativeFunction, name: str, *, inplace: bool = False, reflected: bool = False) -> Callable:
    """The Tensor method ``name`` that calls ``aten::<native>`` (or its in-place variant)."""
    op = native.schema.name + "_" if inplace else native.name
    arguments = native.schema.arguments
    params = ["self"] + [a.name for a in arguments if a.name != "self"]
    if "self" not in {a.name for a in arguments} or any(a.kwarg_only for a in arguments):
        raise ValueError(f"aten::{native.name} has no 'self' argument (or keyword-only ones): "
                         "give it binding=MANUAL and a hand-written method")
    defaults = {a.name: a.default for a in arguments if a.has_default}
    signature = inspect.Signature([_P(p, _P.POSITIONAL_OR_KEYWORD, default=defaults.get(p, _P.empty))
                                   for p in params])
    tail = [defaults.get(p, _REQUIRED) for p in params[1:]]
    order = [params.index(a.name) for a in arguments]  # the schema's argument order
    if reflected:  # other OP self: the schema's two operands, swapped
        order = order[::-1]

    def call(self, *args: Any, **kwargs: Any):
        if kwargs or len(args) > len(tail) or _REQUIRED in tail[len(args):]:
            bound = signature.bind(self, *args, **kwargs)  # TypeError names what is missing or extra
            bound.apply_defaults()
            values = list(bound.arguments.values())
        else:
            values = [self, *args, *tail[len(args):]]
        return route(op, *[values[i] for i in order])

    call.__name__ = name
    call.__qualname__ = f"Tensor.{name}"
    call.__signature__ = signature
    call.__doc__ = f"``aten::{op}``: ``{native.inplace_func if inplace else native.func}``."
    return call


def methods(natives=NATIVE_FUNCTIONS) -> dict[str, Callable]:
    """Every generated method of ``natives``, by name."""
    made: dict[str, Callable] = {}
    for native in natives:
        if native.binding != GENERATED:
            continue
        for name in native.methods:
            made[name] = method(native, name)
        for name in native.reflected:
            made[name] = method(native, name, reflected=True)
        for name in native.inplace_methods:
            made[name] = method(native, name, inplace=True)
    return made


#: ``+ - * / @ **``, the comparisons, their in-place forms, and the element-wise and reduction methods.
OperatorsMixin = type("OperatorsMixin", (), {"__module__": __name__, **methods()})
