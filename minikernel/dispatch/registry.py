"""The operator registry: each op declared once with its schema, its kernels per key, and
the dispatch table computed from them.

PyTorch's ``c10::Dispatcher`` holds one ``OperatorEntry`` per operator
(``aten::add.Tensor``, ``mylib::scale``...). It keeps what was *registered*: the op's
own kernels per key (``torch._C._dispatch_dump("aten::add.Tensor")`` prints them) and,
for all ops, one *backend fallback* per key (autocast's "nothing to do" for most ops,
the ``Python`` key's call into the mode); either may be the special kernel
*fallthrough*: "this key has nothing to do here, go on to the next". From these it
*computes* the op's dispatch table, one entry per key
(``torch._C._dispatch_dump_table``), each time a kernel or a fallback is registered:
``computeDispatchTableEntry`` takes the op's kernel at that key, else the key's
fallback, else nothing ("missing"). A call only indexes the table (``Operator.kernel_for``).
minikernel has no alias keys (its one ``Autograd`` key stands for torch's ``AutogradCPU``,
``AutogradCUDA``...), so torch's middle steps, which copy an alias key's kernel into the
keys it stands for, are not needed here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .extractor import DispatchKeyExtractor
from .keys import DispatchKey, DispatchKeySet
from .schema import FunctionSchema, schema_of

#: ``DispatchKey`` by value: the table's index is the key.
_KEYS = tuple(sorted(DispatchKey))


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


class _Registrations(dict):
    """Kernels by key, as registered; every change recomputes the table entries of the keys it touches."""

    def __init__(self, changed: Callable[[DispatchKey], None], entries: Any = ()) -> None:
        super().__init__(entries)
        self._changed = changed

    def __setitem__(self, key: DispatchKey, kernel: Any) -> None:
        super().__setitem__(DispatchKey(key), kernel)
        self._changed(DispatchKey(key))

    def __delitem__(self, key: DispatchKey) -> None:
        super().__delitem__(key)
        self._changed(DispatchKey(key))

    def pop(self, key: DispatchKey, *default: Any) -> Any:
        had = key in self
        kernel = super().pop(key, *default)
        if had:
            self._changed(DispatchKey(key))
        return kernel

    def popitem(self) -> tuple:
        key, kernel = super().popitem()
        self._changed(key)
        return key, kernel

    def setdefault(self, key: DispatchKey, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, kernel in dict(*args, **kwargs).items():
            self[key] = kernel

    def clear(self) -> None:
        keys = list(self)
        super().clear()
        for key in keys:
            self._changed(key)


@dataclass
class Operator:
    """One operator: its schema, its kernels and its computed dispatch table. Calling it dispatches
    (``dispatcher.call``)."""

    schema: FunctionSchema
    #: the op's own kernels by key, as registered (``OperatorEntry::kernels_``); changing it recomputes the table
    kernels: dict[DispatchKey, Any] = field(default_factory=dict)
    #: the computed table, indexed by key: a ``Kernel``, ``FALLTHROUGH``, or None where nothing is registered
    dispatch_table: list = field(init=False, repr=False, compare=False)
    #: where each entry came from: "kernel", "fallback" or "missing"
    provenance: list = field(init=False, repr=False, compare=False)
    key_extractor: DispatchKeyExtractor = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.kernels = _Registrations(lambda key: _update_dispatch_table_entry(self, key), self.kernels)
        self.key_extractor = DispatchKeyExtractor(self.schema)
        self.dispatch_table, self.provenance = [None] * len(_KEYS), ["missing"] * len(_KEYS)
        for key in _KEYS:  # picks up the fallbacks registered before the op, as torch's OperatorEntry does
            _update_dispatch_table_entry(self, key)

    @property
    def name(self) -> str:
        return self.schema.qualified_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _CALL[0](self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<Operator {self.name}>"

    def kernel_for(self, keys: DispatchKeySet) -> tuple[DispatchKey, Any]:
        """The key and the table entry a call with ``keys`` runs (``OperatorEntry::lookup``): the highest
        key once the op's fallthrough keys are masked out. Refuses like torch where that entry is missing."""
        bits = keys.bits & self.key_extractor.non_fallthrough_keys
        if not bits:
            raise RuntimeError(f"{self.name}: no dispatch key left (every key was excluded or fell through); "
                               "did a kernel redispatch without a backend key?")
        key = _KEYS[bits.bit_length() - 1]
        kernel = self.dispatch_table[key]
        if kernel is None:
            self.report_error(key)
        return key, kernel

    def report_error(self, key: DispatchKey) -> None:
        """torch's ``OperatorEntry::reportError``: no kernel and no fallback at ``key``."""
        raise NotImplementedError(
            f"Could not run '{self.name}' with arguments from the '{key.name}' backend: no kernel is "
            f"registered for {self.name} at {key.name} and {key.name} has no fallback (registered: "
            f"{', '.join(self.table()) or 'none'}). Register one with minikernel.library.impl")

    def table(self) -> dict[str, str]:
        """The registered kernels, key name → kernel name, like ``torch._C._dispatch_dump``'s lines."""
        return {k.name: (repr(v) if v is FALLTHROUGH else v.name) for k, v in sorted(self.kernels.items())}

    def dump_table(self) -> dict[str, str]:
        """The computed table, key name → entry, like ``torch._C._dispatch_dump_table``'s lines
        (``"binary_ops.add [kernel]"``, ``"fallthrough [backend fallback]"``); missing entries left out."""
        where = {"kernel": "kernel", "fallback": "backend fallback"}
        return {key.name: f"{repr(entry) if entry is FALLTHROUGH else entry.name} [{where[self.provenance[key]]}]"
                for key, entry in zip(_KEYS, self.dispatch_table) if entry is not None}


def _fallback_changed(key: DispatchKey) -> None:
    """A backend fallback changed: every operator's entry at ``key`` is computed again
    (``Dispatcher::registerFallback`` → ``OperatorEntry::updateFallback``)."""
    for op in _OPERATORS.values():
        _update_dispatch_table_entry(op, key)


_OPERATORS: dict[str, Operator] = {}
#: The backend fallbacks by key (``Dispatcher::backendFallbackKernels_``); changing one updates every table.
_FALLBACKS: dict[DispatchKey, Any] = _Registrations(_fallback_changed)


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
    """A boxed kernel at ``key`` for every op without its own (``m.fallback``); or ``FALLTHROUGH``, or a
    ``Kernel`` taken back from ``_FALLBACKS`` (to restore one)."""
    if fn is not FALLTHROUGH and not isinstance(fn, Kernel):
        fn = Kernel(fn, name or getattr(fn, "__qualname__", repr(fn)), boxed=True)
    _FALLBACKS[DispatchKey(key)] = fn


def deregister_fallback(key: DispatchKey) -> Any:
    """Remove ``key``'s fallback (``Dispatcher::deregisterFallback``) and return it, None if there was none."""
    return _FALLBACKS.pop(DispatchKey(key), None)


def lookup(op: Operator, key: DispatchKey) -> tuple[Any, str]:
    """What ``op``'s table holds at ``key``, and why (torch's ``computeDispatchTableEntryWithDebug``):
    ``op``'s own kernel there (``"kernel"``), else the key's fallback (``"fallback"``), else
    ``(None, "missing")``. Computed from the registrations, each time it is called."""
    if key in op.kernels:
        return op.kernels[key], "kernel"
    if key in _FALLBACKS:
        return _FALLBACKS[key], "fallback"
    return None, "missing"


def _update_dispatch_table_entry(op: Operator, key: DispatchKey) -> None:
    """Bring ``op``'s table entry at ``key`` in line with the registrations (``updateDispatchTableEntry_``),
    and its key mask: a fallthrough entry is masked out of every call."""
    entry, how = lookup(op, key)
    op.dispatch_table[key], op.provenance[key] = entry, how
    op.key_extractor.set_operator_has_fallthrough_for_key(key, entry is FALLTHROUGH)
