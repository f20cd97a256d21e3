"""Operator schemas: ``"add(Tensor self, Tensor other) -> Tensor"``, parsed and checked.

Every PyTorch operator is declared once by a schema string in
``aten/src/ATen/native/native_functions.yaml``
(``torch.ops.aten.add.Tensor._schema`` prints it). The dispatcher uses it to
know which arguments are tensors (their key sets decide the kernel), to bind a
call's arguments by name, and to refuse a wrong call before any kernel runs.
minikernel's schemas use the same syntax for the subset it needs: argument types
``Tensor``, ``Tensor?``, ``int``, ``int?``, ``float``, ``bool``, ``Scalar``, ``int[]``;
defaults; ``*`` before keyword-only arguments; one or more returns; and the alias
annotations: ``Tensor(a) self -> Tensor(a)`` (the result may share ``self``'s memory: a
view) and ``Tensor(a!) self -> Tensor(a!)`` (``self`` is written in place).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

_TYPES = ("Tensor", "Tensor?", "Tensor[]", "int", "int?", "float", "bool", "Scalar", "int[]", "int[]?", "Any")
_SCHEMA = re.compile(r"^\s*([A-Za-z_][\w:]*)(?:\.(\w+))?\((.*)\)\s*->\s*(.+?)\s*$")
_ARG = re.compile(r"^\s*([\w\[\]?]+)(?:\((\w!?)\))?\s+(\w+)\s*(?:=\s*(.+?))?\s*$")
_ALIAS = re.compile(r"\((\w!?)\)")


@dataclass(frozen=True)
class Argument:
    type: str
    name: str
    default: Any = None
    has_default: bool = False
    kwarg_only: bool = False
    alias: str = ""  #: ``"a"`` for ``Tensor(a)`` (may be aliased), ``"a!"`` for ``Tensor(a!)`` (written)

    @property
    def is_tensor(self) -> bool:
        return self.type.startswith("Tensor")


@dataclass(frozen=True)
class FunctionSchema:
    """A parsed schema. ``str(schema)`` gives the text back."""

    name: str
    overload: str
    arguments: tuple[Argument, ...]
    returns: tuple[str, ...]
    text: str
    open: bool = False  #: declared without arguments: every argument with a key set counts

    def __str__(self) -> str:
        return self.text

    @property
    def positions(self) -> tuple[tuple[int, ...], int]:
        """(indices of the positional ``Tensor`` arguments, number of positional arguments), cached."""
        cached = self.__dict__.get("_positions")
        if cached is None:
            positional = [a for a in self.arguments if not a.kwarg_only]
            cached = tuple(i for i, a in enumerate(positional) if a.is_tensor), len(positional)
            object.__setattr__(self, "_positions", cached)
        return cached

    @property
    def is_inplace(self) -> bool:
        """An argument is written (``Tensor(a!) self``): ``add_``, ``copy_``."""
        return any(a.alias.endswith("!") for a in self.arguments)

    @property
    def is_view(self) -> bool:
        """A result aliases an argument without writing it (``Tensor(a) self -> Tensor(a)``): a view."""
        read = {a.alias for a in self.arguments if a.alias and not a.alias.endswith("!")}
        return any(m and m.group(1) in read for m in (_ALIAS.search(r) for r in self.returns))

    @property
    def qualified_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """Match a call's arguments to the schema (name → value), with defaults; TypeError if they don't fit."""
        if self.open:
            return {**{str(i): v for i, v in enumerate(args)}, **kwargs}
        positional = [a for a in self.arguments if not a.kwarg_only]
        if len(args) > len(positional):
            raise TypeError(f"{self.qualified_name}() takes {len(positional)} positional argument(s) but "
                            f"{len(args)} were given; schema: {self.text}")
        bound = {a.name: v for a, v in zip(positional, args)}
        for key, value in kwargs.items():
            if key not in {a.name for a in self.arguments}:
                raise TypeError(f"{self.qualified_name}() got an unexpected keyword argument '{key}'; "
                                f"schema: {self.text}")
            if key in bound:
                raise TypeError(f"{self.qualified_name}() got multiple values for argument '{key}'")
            bound[key] = value
        for a in self.arguments:
            if a.name not in bound:
                if not a.has_default:
                    raise TypeError(f"{self.qualified_name}() missing required argument '{a.name}' "
                                    f"(schema: {self.text})")
                bound[a.name] = a.default
        return bound

    def tensor_arguments(self, args: tuple, kwargs: dict) -> list:
        """The values passed for ``Tensor`` arguments: their key sets decide the kernel."""
        tensors, n_positional = self.positions
        if not kwargs and not self.open and len(args) <= n_positional:
            # the common call, positional only: no binding needed (a missing argument fails in the kernel)
            return [args[i] for i in tensors if i < len(args) and args[i] is not None]
        bound = self.bind(args, kwargs)
        if self.open:
            return [v for v in bound.values() if hasattr(v, "_dispatch_keys")]
        return [bound[a.name] for a in self.arguments if a.is_tensor and bound[a.name] is not None]


def _default(text: str) -> Any:
    words = {"True": True, "False": False, "None": None, "[]": ()}
    if text in words:
        return words[text]
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse_schema(text: str) -> FunctionSchema:
    """Parse ``"name.overload(Type arg, ..., *, Type kw=default) -> Ret"``.

    Example::

        >>> parse_schema("mylib::scale(Tensor x, float k=2.0) -> Tensor").arguments[1].default
        2.0
    """
    match = _SCHEMA.match(text)
    if not match:
        raise ValueError(f"not a schema: {text!r}; write it like 'add(Tensor self, Tensor other) -> Tensor'")
    name, overload, body, ret = match.groups()
    arguments, kwarg_only = [], False
    for piece in filter(None, (p.strip() for p in body.split(","))):
        if piece == "*":
            kwarg_only = True
            continue
        arg = _ARG.match(piece)
        if not arg or arg.group(1) not in _TYPES:
            raise ValueError(f"schema {text!r}: cannot read argument {piece!r}; types are {', '.join(_TYPES)}")
        typ, alias, arg_name, default = arg.groups()
        arguments.append(Argument(typ, arg_name, None if default is None else _default(default),
                                  default is not None, kwarg_only, alias or ""))
    ret = ret.strip()
    if ret.startswith("(") and ret.endswith(")"):  # several returns: "(Tensor values, Tensor indices)"
        ret = ret[1:-1]
    returns = tuple(r.strip() for r in ret.split(",") if r.strip())
    return FunctionSchema(name, overload or "", tuple(arguments), returns, text.strip())


def schema_of(schema: Optional[str], name: str) -> FunctionSchema:
    """A schema for ``name``: the given text, or ``name(Any... ) -> Any`` when none is given."""
    return parse_schema(schema) if schema else FunctionSchema(name, "", (), ("Any",), f"{name}(...) -> Any", open=True)
