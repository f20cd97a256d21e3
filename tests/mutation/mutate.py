"""Mutants of the reference bodies: find each exercise's functions, change one thing at a time.

An exercise's functions are the stubs decorated ``@exercise("N.M")`` under ``minikernel/``;
their references are the functions of the same names in the mirroring module under
``solutions/``. Only those functions' bodies are mutated (never the files: each mutant is
a new source text, the whole reference module with one change, written elsewhere).

A mutant's ``key`` (``function:line:column:operator``, the line counted from the ``def``)
names it across runs, so ``equivalent.json`` can list the survivors that compute the
same thing as the reference.
"""
from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ID = re.compile(r"^[1-9][0-9]*\.[1-9][0-9]*$")


@dataclass(frozen=True)
class Exercise:
    id: str
    module: str  #: dotted path under minikernel/ and solutions/, e.g. "dispatch.rebuild"
    functions: tuple[str, ...]

    @property
    def reference(self) -> Path:
        return ROOT / "solutions" / Path(*self.module.split(".")).with_suffix(".py")


@dataclass(frozen=True)
class Mutant:
    exercise: str
    key: str  #: "function:line:column:operator"
    before: str  #: the reference's line, stripped
    source: str  #: the whole reference module with this one change, plus EXERCISE = "N.M"


def _exercise_id(decorator: ast.expr) -> str | None:
    if (isinstance(decorator, ast.Call) and getattr(decorator.func, "id", getattr(decorator.func, "attr", None))
            == "exercise" and decorator.args and isinstance(decorator.args[0], ast.Constant)
            and isinstance(decorator.args[0].value, str) and _ID.match(decorator.args[0].value)):
        return decorator.args[0].value
    return None


def exercises() -> dict[str, Exercise]:
    """Every exercise of ``minikernel/`` (read from the source, nothing imported), in numbered order."""
    found: dict[str, tuple[str, list[str]]] = {}
    for path in sorted((ROOT / "minikernel").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT / "minikernel").with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef):
                for decorator in node.decorator_list:
                    ident = _exercise_id(decorator)
                    if ident:
                        found.setdefault(ident, (module, []))[1].append(node.name)
    order = sorted(found, key=lambda i: tuple(int(p) for p in i.split(".")))
    return {i: Exercise(i, found[i][0], tuple(found[i][1])) for i in order}


# --- the operators ----------------------------------------------------------------------

_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
          ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.BitOr: ast.BitAnd, ast.BitAnd: ast.BitOr,
          ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.MatMult: ast.Mult}
_DROPPED = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.If, ast.For, ast.While, ast.With,
            ast.Try, ast.Raise, ast.Assert, ast.Delete, ast.Continue, ast.Break)


def _number(node: ast.expr) -> int | float | None:
    """The value of an int/float literal (``-1`` included), else None (bools are not numbers here)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _literal(value: int | float) -> ast.expr:
    return ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)


def _shifted(node: ast.expr, by: int) -> ast.expr:
    return ast.BinOp(copy.deepcopy(node), ast.Add() if by > 0 else ast.Sub(), ast.Constant(abs(by)))


def _changes(node: ast.AST, negated: set[int]) -> Iterator[tuple[str, ast.AST, ast.AST]]:
    """``(operator, node, replacement)`` for every mutation of ``node`` itself (not its children);
    ``negated`` holds the ids of the literals under a unary minus (changed as ``-n``, not ``n``)."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE:
                new = copy.deepcopy(node)
                new.ops[i] = _COMPARE[type(op)]()
                yield f"compare {type(op).__name__}->{_COMPARE[type(op)].__name__}", node, new
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH:
        new = copy.deepcopy(node)
        new.op = _ARITH[type(node.op)]()
        yield f"arith {type(node.op).__name__}->{type(new.op).__name__}", node, new
    value = _number(node)
    if value is not None and id(node) not in negated and (
            not isinstance(node, ast.UnaryOp) or isinstance(node.operand, ast.Constant)):
        for other in ([1, -1] if value == 0 else [0, -1] if value == 1 else [0, 1]):
            other = float(other) if isinstance(value, float) else other
            yield f"constant {value!r}->{other!r}", node, _literal(other)
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"constant {node.value}->{not node.value}", node, ast.Constant(not node.value)
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "range":
        for i, arg in enumerate(node.args):
            for by in (1, -1):
                new = copy.deepcopy(node)
                new.args[i] = _shifted(arg, by)
                yield f"range arg {i} {by:+d}", node, new
    if isinstance(node, ast.Subscript):
        index = node.slice
        if isinstance(index, ast.Slice):
            for part in ("lower", "upper"):
                bound = getattr(index, part)
                if bound is not None:
                    for by in (1, -1):
                        new = copy.deepcopy(node)
                        setattr(new.slice, part, _shifted(bound, by))
                        yield f"slice {part} {by:+d}", node, new
        elif not (isinstance(index, ast.Constant) and isinstance(index.value, str)) and not isinstance(index, ast.Tuple):
            for by in (1, -1):
                new = copy.deepcopy(node)
                new.slice = _shifted(index, by)
                yield f"index {by:+d}", node, new
    if isinstance(node, ast.Call):
        positional = [i for i, a in enumerate(node.args) if not isinstance(a, ast.Starred)]
        for i, j in zip(positional, positional[1:]):
            if j == i + 1 and ast.dump(node.args[i]) != ast.dump(node.args[j]):
                new = copy.deepcopy(node)
                new.args[i], new.args[j] = new.args[j], new.args[i]
                yield f"swap args {i},{j}", node, new
    flipped = isinstance(getattr(node, "test", None), ast.Compare) and len(node.test.ops) == 1 and isinstance(
        node.test.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn))  # the flip is the negation
    if isinstance(node, (ast.If, ast.While, ast.IfExp)) and not flipped:
        new = copy.deepcopy(node)
        new.test = ast.UnaryOp(ast.Not(), new.test)
        yield "negate condition", node, new
    if isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield f"boolop {type(node.op).__name__}->{type(new.op).__name__}", node, new
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not", node, copy.deepcopy(node.operand)
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        yield "return None", node, ast.Return(ast.Constant(None))


def _statement_drops(function: ast.FunctionDef) -> Iterator[tuple[str, ast.AST, ast.AST]]:
    for node in ast.walk(function):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            for i, stmt in enumerate(statements if isinstance(statements, list) else []):
                docstring = (node is function and i == 0 and isinstance(stmt, ast.Expr)
                             and isinstance(stmt.value, ast.Constant))
                if isinstance(stmt, _DROPPED) and not docstring:
                    yield "drop statement", stmt, ast.Pass()


def _slots(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    """``{id(node): (parent, field, index in the field's list or None)}`` for every node of ``tree``."""
    found = {}
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if isinstance(value, list):
                found.update({id(v): (parent, name, i) for i, v in enumerate(value) if isinstance(v, ast.AST)})
            elif isinstance(value, ast.AST):
                found[id(value)] = (parent, name, None)
    return found


def _with_change(function: ast.FunctionDef, slots: dict, node: ast.AST, replacement: ast.AST) -> str:
    """The source of ``function`` with ``node`` replaced by ``replacement`` (put back as it was after)."""
    parent, name, index = slots[id(node)]
    new = ast.fix_missing_locations(ast.copy_location(replacement, node))
    if index is None:
        setattr(parent, name, new)
    else:
        getattr(parent, name)[index] = new
    try:
        return ast.unparse(function)
    finally:
        if index is None:
            setattr(parent, name, node)
        else:
            getattr(parent, name)[index] = node


def _annotations(node: ast.AST) -> list[ast.expr]:
    """The type hints on ``node`` (never evaluated in the course's modules: nothing to mutate)."""
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    if isinstance(node, ast.arg):
        return [node.annotation] if node.annotation else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.returns] if node.returns else []
    return []


def mutants(exercise: Exercise, text: str | None = None) -> list[Mutant]:
    """Every mutant of the exercise's reference functions (``text``: the reference module's
    source, read from ``solutions/`` when not given), in source order."""
    text = exercise.reference.read_text() if text is None else text
    lines = text.splitlines()
    tree = ast.parse(text, str(exercise.reference))
    slots = _slots(tree)
    found: list[Mutant] = []
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef) or function.name not in exercise.functions:
            continue
        annotations = {id(a) for n in ast.walk(function) for a in _annotations(n) for a in ast.walk(a)}
        body = [n for stmt in function.body for n in ast.walk(stmt) if id(n) not in annotations]
        negated = {id(n.operand) for n in body if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)}
        changes = [c for n in body for c in _changes(n, negated)] + list(_statement_drops(function))
        changes.sort(key=lambda c: (c[1].lineno, c[1].col_offset, c[0]))
        seen: set[str] = set()
        for operator, node, replacement in changes:
            key = f"{function.name}:{node.lineno - function.lineno}:{node.col_offset}:{operator}"
            if key in seen:  # the same change reached twice (a -1 literal is a constant and a unary op)
                continue
            seen.add(key)
            first = min([function.lineno] + [d.lineno for d in function.decorator_list]) - 1
            source = "\n".join(lines[:first] + [_with_change(function, slots, node, replacement)]
                               + lines[function.end_lineno:] + [f"EXERCISE = {exercise.id!r}", ""])
            found.append(Mutant(exercise.id, key, lines[node.lineno - 1].strip(), source))
    return found
