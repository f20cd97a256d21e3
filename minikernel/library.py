"""``minikernel.library``: add your own operator to minikernel's dispatcher, like ``torch.library``.

An operator is declared once with a schema, then kernels are added per dispatch key::

    @minikernel.library.custom_op("mylib::mysin", mutates_args=())
    def mysin(x: Tensor) -> Tensor:             # the CPU (and CUDA) kernel
        return minikernel.tensor(np.sin(x.to_numpy()))

    mysin.register_fake(lambda x: ...)          # the Meta kernel: shapes and dtypes only
    mysin.register_autograd(backward, setup_context=setup_context)   # exercise 9.4

``torch.library.custom_op`` infers the schema from the type hints, so does this
(``Tensor``, ``float``, ``int``, ``bool``), or pass ``schema=``. ``register_autograd``
puts a kernel at the ``Autograd`` key: when an input requires grad it runs the
layers below (the backend kernel) inside a ``Function`` whose backward is yours;
otherwise it redispatches straight to the backend. Without it, the op runs and records a
node whose backward raises "no autograd formula was registered", as torch's does. A
kernel may not return one of its inputs or a view of one (torch refuses that too).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence

from . import dispatch
from .autograd.function import Function
from .autograd.grad_mode import is_grad_enabled
from .course.exercise import exercise
from .dispatch import DispatchKey, Operator, registry
from .tensor import Tensor

_DEVICE_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta}
_HINTS = {Tensor: "Tensor", float: "float", int: "int", bool: "bool", "Tensor": "Tensor", "float": "float",
          "int": "int", "bool": "bool"}


def define(qualname: str, schema: str) -> Operator:
    """Declare ``qualname`` with ``schema`` = ``"(Tensor x, float k) -> Tensor"``. Matches ``torch.library.define``."""
    if "::" not in qualname:
        raise ValueError(f"operator name {qualname!r} needs a namespace: write 'mylib::{qualname}'")
    if not schema.lstrip().startswith("("):
        raise ValueError(f"schema {schema!r} for {qualname!r}: give the arguments only, like "
                         f"'(Tensor x, float k) -> Tensor' (the name is {qualname!r} already)")
    return registry.define(qualname + schema)


def _operator(op: Any) -> Operator:
    if isinstance(op, CustomOpDef):
        return op.op
    return op if isinstance(op, Operator) else registry.get(op)


def impl(op: Any, device_types: str | Sequence[str], fn: Callable) -> None:
    """Register ``fn`` as ``op``'s kernel for ``device_types`` ("cpu", "cuda", "meta"). Matches ``torch.library.impl``."""
    for device in [device_types] if isinstance(device_types, str) else device_types:
        if device not in _DEVICE_KEYS:
            raise ValueError(f"device type {device!r}: use one of {', '.join(_DEVICE_KEYS)}")
        registry.impl(_operator(op), _DEVICE_KEYS[device], fn, name=getattr(fn, "__qualname__", None))


def infer_schema(fn: Callable) -> str:
    """``"(Tensor x, float k=2.0) -> Tensor"`` from ``fn``'s type hints (``torch.library.infer_schema``)."""
    parts = []
    for p in inspect.signature(fn).parameters.values():
        hint = p.annotation.rpartition(".")[2] if isinstance(p.annotation, str) else p.annotation
        if hint not in _HINTS:
            raise TypeError(f"{fn.__name__}: parameter {p.name!r} needs a type hint among Tensor, float, int, "
                            f"bool (got {p.annotation!r}); or pass schema= yourself")
        default = "" if p.default is inspect.Parameter.empty else f"={p.default}"
        parts.append(f"{_HINTS[hint]} {p.name}{default}")
    return f"({', '.join(parts)}) -> Tensor"


class CustomOpDef:
    """What ``custom_op`` returns: callable like the op; ``register_fake``/``register_autograd``."""

    def __init__(self, op: Operator, fn: Callable) -> None:
        self.op, self._fn = op, fn
        self.__name__ = getattr(fn, "__name__", op.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.op(*args, **kwargs)

    def register_fake(self, fn: Callable) -> Callable:
        impl(self.op, "meta", fn)
        return fn

    def register_autograd(self, backward: Callable, *, setup_context: Optional[Callable] = None) -> None:
        register_autograd(self.op, backward, setup_context=setup_context)

    def __repr__(self) -> str:
        return f"<CustomOpDef {self.op.schema}>"


def custom_op(name: str, fn: Optional[Callable] = None, *, mutates_args: Sequence[str] = (),
              device_types: str | Sequence[str] = ("cpu", "cuda"), schema: Optional[str] = None):
    """Declare ``name`` and register ``fn`` as its backend kernel. Matches ``torch.library.custom_op``.

    Args:
        name: ``"namespace::op"``.
        fn: the kernel; leave out to use ``custom_op`` as a decorator.
        mutates_args: must be empty here (minikernel's custom ops are functional).
        device_types: the backends ``fn`` serves (default both CPU and CUDA).
        schema: ``"(Tensor x) -> Tensor"``; inferred from ``fn``'s type hints if left out.
    """
    if mutates_args:
        raise NotImplementedError("minikernel's custom ops must not mutate their inputs: pass mutates_args=()")

    def wrap(kernel: Callable) -> CustomOpDef:
        op = define(name, schema or infer_schema(kernel))
        impl(op, device_types, _no_aliasing(kernel))
        registry.impl(op, DispatchKey.Autograd, _no_formula_kernel(op), name="autograd: no formula registered",
                      with_keys=True)
        return CustomOpDef(op, kernel)

    return wrap if fn is None else wrap(fn)


_ALIAS = ("{name} (with implementation in {module}): The output of this custom operator (1) must not also be an "
          "input to this custom operator and (2) may not alias any inputs to this custom operator or other returns. "
          "The most common way to trigger this error is if we have y = custom_op(x) and y and x are the same Tensor. "
          "Please instead return a clone of the offending output tensor(s) (e.g. return x.clone()) or refactor the "
          "custom operator to not return y.")


def _no_aliasing(kernel: Callable) -> Callable:
    """``kernel``, refusing an output that is an input or shares its memory (torch's custom ops are functional)."""
    def checked(*args: Any, **kwargs: Any) -> Any:
        out = kernel(*args, **kwargs)
        inputs = [a.untyped_storage().data_ptr() for a in args if isinstance(a, Tensor) and a.numel()]
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, Tensor) and (any(t is a for a in args) or t.numel() and
                                          t.untyped_storage().data_ptr() in inputs):
                raise RuntimeError(_ALIAS.format(name=getattr(kernel, "__name__", "op"),
                                                 module=getattr(kernel, "__module__", "?")))
        return out

    checked.__qualname__ = getattr(kernel, "__qualname__", repr(kernel))
    return checked


class _NoFormula(Function):
    """The node a custom op without ``register_autograd`` records: its backward refuses, as torch's does
    (rather than silently dropping the op's share of the gradient)."""

    @staticmethod
    def forward(ctx, op: Operator, keys: Any, *args: Any) -> Any:
        ctx.op_name = op.name
        return dispatch.redispatch(op, keys, *args)

    @staticmethod
    def backward(ctx, grad: Tensor):
        name = ctx.op_name.replace("::", ".")
        raise RuntimeError(f"Trying to backward through {name}.default but no autograd formula was registered. "
                           f"Please use register_autograd to add one.")


def _no_formula_kernel(op: Operator) -> Callable:
    def autograd_kernel(keys: Any, *args: Any) -> Any:
        if is_grad_enabled() and any(getattr(a, "requires_grad", False) for a in args):
            return _NoFormula.apply(op, keys, *args)
        return dispatch.redispatch(op, keys, *args)

    return autograd_kernel


@exercise("9.4")
def custom_op_forward(ctx: Any, op: Operator, keys: Any, setup_context: Optional[Callable], *args: Any) -> Any:
    """Forward of a custom op's autograd ``Function``: run the layers below ``Autograd``.

    * ``output = dispatch.redispatch(op, keys, *args)`` — the backend kernel computes
      (a ``Function``'s forward runs without recording, so nothing inside is recorded);
    * ``setup_context(ctx, args, output)`` if given: it saves what backward needs
      (``ctx.save_for_backward(...)``);
    * keep the number of ``args`` on ``ctx`` for backward, and return ``output``.

    Matches: ``torch.library.register_autograd``'s forward. ≈4 lines.
    """
    # TODO(9.4): ≈4 lines
    raise NotImplementedError("exercise 9.4 (custom_op_forward) is not implemented yet")


@exercise("9.4")
def custom_op_backward(ctx: Any, backward: Callable, grad: Tensor) -> tuple:
    """Backward: ``backward(ctx, grad)`` gives the gradient of each of the op's inputs (a single
    tensor when there is one input, else a tuple, ``None`` for an input without one; a lone
    ``None`` when the one input gets no gradient). Only a tuple is unpacked: a list is one
    value, so a list of two gradients for two inputs is refused, as torch refuses it.

    Return one entry per argument of ``Function.apply``: ``None`` for ``op``, ``keys``,
    ``setup_context`` (and for ``backward``'s own slot, see ``CustomOpFunction``), then the
    input gradients; check that ``backward`` gave as many as the op has inputs, and raise a
    ``RuntimeError`` that says how many it should return otherwise (the message contains
    that number, the op's count of inputs, as a figure).

    Matches: ``torch.library.register_autograd`` (its gradients, and gradcheck). ≈6 lines.
    """
    # TODO(9.4): ≈6 lines
    raise NotImplementedError("exercise 9.4 (custom_op_backward) is not implemented yet")


class CustomOpFunction(Function):
    """``CustomOpFunction.apply(op, keys, backward, setup_context, *args)``: one node per call."""

    @staticmethod
    def forward(ctx, op, keys, backward, setup_context, *args):
        ctx.user_backward = backward
        return custom_op_forward(ctx, op, keys, setup_context, *args)

    @staticmethod
    def backward(ctx, grad):
        return (None, *custom_op_backward(ctx, ctx.user_backward, grad))


def register_autograd(op: Any, backward: Callable, *, setup_context: Optional[Callable] = None) -> None:
    """Give ``op`` a backward: a kernel at the ``Autograd`` key. Matches ``torch.library.register_autograd``.

    Args:
        op: the operator (its name, an ``Operator`` or what ``custom_op`` returned).
        backward: ``backward(ctx, grad) -> gradient(s) of the inputs``.
        setup_context: ``setup_context(ctx, inputs, output)``, saves what backward needs.
    """
    target = _operator(op)

    def autograd_kernel(keys, *args):
        if is_grad_enabled() and any(getattr(a, "requires_grad", False) for a in args):
            return CustomOpFunction.apply(target, keys, backward, setup_context, *args)
        return dispatch.redispatch(target, keys, *args)

    registry.impl(target, DispatchKey.Autograd, autograd_kernel, name=f"register_autograd({target.name})",
                  with_keys=True)
