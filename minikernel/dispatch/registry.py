"""The operator registry: each op declared once with its schema, and its kernels per key.

PyTorch's ``c10::Dispatcher`` holds one ``OperatorHandle`` per operator
(``aten::add.Tensor``, ``mylib::scale``...) with a table: dispatch key → kernel.
``torch._C._dispatch_dump("aten::add.Tensor")`` prints that table. Besides an
op's own kernels there are *fallbacks*, one per key for all ops (autocast's
"nothing to do" for most ops, the ``Python`` key's call into the mode), and the
special kernel *fallthrough*: "this key has nothing to do here, go on to the next".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .keys import DispatchKey
from .schema import FunctionSchema, schema_of


class _Fallthrough:
    """The fallthrough kernel: the key is skipped, the next key's kernel runs."""

    def __repr__(self) -> str:
        return "fallthrough"


FALLTHROUGH = _Fallthrough()


@dataclass
class Kernel:
    """A kernel registered at one key.

    ``boxed`` kernels (fallbacks) get ``(op, keys, args, kwargs)``; the others get
    the call's own arguments, preceded by ``keys`` (the keys below this one, for a
    redispatch) when ``with_keys`` is true, like a c10 kernel whose first argument is
    a ``DispatchKeySet``.
    """

    fn: Callable
    name: str
    with_keys: bool = False
    boxed: bool = False

    def call(self, op: "Operator", keys: Any, args: tuple, kwargs: dict) -> Any:
        if self.boxed:
            return self.fn(op, keys, args, kwargs)
        if self.with_keys:
            return self.fn(keys, *args, **kwargs)
        return self.fn(*args, **kwargs)


@dataclass
class Operator:
    """One operator: its schema and its kernel table. Calling it dispatches (``dispatcher.call``)."""

    schema: FunctionSchema
    kernels: dict[DispatchKey, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.schema.qualified_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _CALL[0](self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<Operator {self.name}>"

    def table(self) -> dict[str, str]:
        """Key name → kernel name, like ``torch._C._dispatch_dump``'s lines."""
        return {k.name: (repr(v) if v is FALLTHROUGH else v.name) for k, v in sorted(self.kernels.items())}


_OPERATORS: dict[str, Operator] = {}
_FALLBACKS: dict[DispatchKey, Any] = {}
def _not_loaded(op: "Operator", *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("minikernel.dispatch.dispatcher is not imported: import minikernel.dispatch")


#: ``dispatcher.call``, plugged in by dispatcher.py (which imports this module, so it can't be imported here).
_CALL: list[Callable] = [_not_loaded]


def _qualify(name: str) -> str:
    return name if "::" in name else f"aten::{name}"


def define(schema: str) -> Operator:
    """Declare an operator once (``TORCH_LIBRARY``'s ``m.def``); a second declaration is an error."""
    parsed = schema_of(schema, "")
    qualified = _qualify(parsed.qualified_name)
    if qualified in _OPERATORS:
        raise RuntimeError(f"operator {qualified} is already defined (schema {_OPERATORS[qualified].schema}); "
                           "an operator is declared once, then kernels are added with impl()")
    parsed = schema_of(schema.replace(parsed.name, _qualify(parsed.name), 1), "")
    op = _OPERATORS[qualified] = Operator(parsed)
    return op


def define_open(name: str) -> Operator:
    """Declare an operator without a typed schema: every argument that has dispatch keys counts."""
    qualified = _qualify(name)
    if qualified not in _OPERATORS:
        _OPERATORS[qualified] = Operator(schema_of(None, qualified))
    return _OPERATORS[qualified]


def get(name: str) -> Operator:
    """The operator called ``name`` (``"aten::add"`` or ``"add"``)."""
    try:
        return _OPERATORS[_qualify(name)]
    except KeyError:
        raise RuntimeError(f"no operator named {_qualify(name)}: declare it with define() first") from None


def has(name: str) -> bool:
    return _qualify(name) in _OPERATORS


def undefine(name: str) -> None:
    """Remove an operator (tests and notebooks that define throw-away ops)."""
    _OPERATORS.pop(_qualify(name), None)


def operators() -> dict[str, Operator]:
    return dict(_OPERATORS)


def impl(op: Operator, key: DispatchKey, fn: Callable, *, name: Optional[str] = None,
         with_keys: bool = False) -> None:
    """Register ``fn`` as ``op``'s kernel at ``key`` (``m.impl``); replaces an earlier one."""
    op.kernels[DispatchKey(key)] = Kernel(fn, name or getattr(fn, "__qualname__", repr(fn)), with_keys)


def impl_fallthrough(op: Operator, key: DispatchKey) -> None:
    """Mark ``key`` as having nothing to do for ``op``."""
    op.kernels[DispatchKey(key)] = FALLTHROUGH


def fallback(key: DispatchKey, fn: Any, *, name: Optional[str] = None) -> None:
    """A boxed kernel at ``key`` for every op without its own (``m.fallback``); or ``FALLTHROUGH``."""
    if fn is FALLTHROUGH:
        _FALLBACKS[DispatchKey(key)] = FALLTHROUGH
    else:
        _FALLBACKS[DispatchKey(key)] = Kernel(fn, name or getattr(fn, "__qualname__", repr(fn)), boxed=True)


def lookup(op: Operator, key: DispatchKey) -> tuple[Any, str]:
    """The kernel that runs for ``op`` at ``key`` and where it came from: ``"kernel"``,
    ``"fallback"``, or ``"missing"`` (then the kernel is None)."""
    if key in op.kernels:
        return op.kernels[key], "kernel"
    if key in _FALLBACKS:
        return _FALLBACKS[key], "fallback"
    return None, "missing"
