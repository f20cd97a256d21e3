"""Chapter 09's library code contains no function that a 9.x exercise asks the learner to write.

The library (``minikernel/`` outside ``course/``, stubs excepted) dispatches through computed
tables, as torch does; the exercises write the interpretive version. A function the library
defines is an exercise's answer if it has the exercise's name, or its shape (read with ``ast``):

* 9.1 ``compute_keys``: one function reads a call's tensor arguments *and* the thread-local
  include/exclude sets;
* 9.2 ``run_dispatch``: a loop that takes the highest key each time round, or skips
  fallthrough kernels one key at a time;
* 9.3 ``mode_fallback``: one function pops the mode stack *and* calls a mode's ``__dispatch__``;
* 9.4 ``custom_op_forward`` / ``custom_op_backward``: one function redispatches *and* calls
  ``setup_context``; or calls the user's ``backward(ctx, ...)`` and refuses a wrong count.

The shapes are checked on the references too: each must be recognised there, so the check
would see an answer that was renamed.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable, Iterator

import pytest

from minikernel.course import exercise as ex

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "minikernel"
FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)


def _library_files() -> list[Path]:
    return [p for p in sorted(LIBRARY.rglob("*.py")) if "course" not in p.relative_to(LIBRARY).parts]


def _is_stub(node: ast.AST) -> bool:
    """Decorated ``@exercise("N.M")``: the learner's own stub."""
    return any(isinstance(d, ast.Call) and getattr(d.func, "id", getattr(d.func, "attr", "")) == "exercise"
               for d in getattr(node, "decorator_list", ()))


def _functions(tree: ast.AST) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if isinstance(node, FUNCTION) and not _is_stub(node):
            yield node


def _called(node: ast.AST) -> set[str]:
    """The names called in ``node`` (``f(...)`` and ``x.f(...)`` both give ``f``)."""
    return {getattr(n.func, "id", getattr(n.func, "attr", "")) for n in ast.walk(node) if isinstance(n, ast.Call)}


def _attributes(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _reads_thread_local_sets(node: ast.AST) -> bool:
    return bool({"local_include", "local_exclude"} & _called(node)) or {"include", "exclude"} <= _attributes(node)


def _computes_a_calls_keys(fn: ast.AST) -> bool:
    return "tensor_arguments" in _called(fn) and _reads_thread_local_sets(fn)


def _skips_fallthrough_in_a_loop(loop: ast.AST) -> bool:
    compares = [n for n in ast.walk(loop) if isinstance(n, ast.Compare)]
    tests_fallthrough = any(isinstance(c, ast.Name) and c.id == "FALLTHROUGH"
                            for n in compares for c in [n.left, *n.comparators])
    moves_on = any(isinstance(n, ast.Continue) for n in ast.walk(loop)) or "remove" in _called(loop)
    return tests_fallthrough and moves_on


def _interprets_the_keys(fn: ast.AST) -> bool:
    loops = [n for n in ast.walk(fn) if isinstance(n, (ast.While, ast.For))]
    return any("highest" in _called(loop) or _skips_fallthrough_in_a_loop(loop) for loop in loops)


def _hands_a_call_to_a_mode(fn: ast.AST) -> bool:
    called = _called(fn)
    return {"mode_stack", "pop", "__dispatch__"} <= called


def _forwards_a_custom_op(fn: ast.AST) -> bool:
    return {"redispatch", "setup_context"} <= _called(fn)


def _checks_a_custom_ops_gradients(fn: ast.AST) -> bool:
    user_backward = any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "backward" and n.args
                        and getattr(n.args[0], "id", "") == "ctx" for n in ast.walk(fn))
    return user_backward and "len" in _called(fn) and any(isinstance(n, ast.Raise) for n in ast.walk(fn))


SHAPES: dict[str, Callable[[ast.AST], bool]] = {
    "compute_keys": _computes_a_calls_keys,
    "run_dispatch": _interprets_the_keys,
    "mode_fallback": _hands_a_call_to_a_mode,
    "custom_op_forward": _forwards_a_custom_op,
    "custom_op_backward": _checks_a_custom_ops_gradients,
}
CHAPTER_09 = {name: eid for eid, entry in ex.registry().items() if eid.startswith("9.") for name in entry.stubs}


def test_every_9x_exercise_has_a_shape():
    assert set(CHAPTER_09) == set(SHAPES)


def test_the_library_defines_no_9x_exercise():
    files = _library_files()
    assert LIBRARY / "dispatch" / "dispatcher.py" in files and LIBRARY / "library.py" in files
    found = []
    for path in files:
        where = path.relative_to(ROOT)
        for fn in _functions(ast.parse(path.read_text(), str(path))):
            if fn.name in CHAPTER_09:
                found.append(f"{where}:{fn.lineno} {fn.name}: the name of exercise {CHAPTER_09[fn.name]}")
            found += [f"{where}:{fn.lineno} {fn.name}: the shape of exercise {CHAPTER_09[name]} ({name})"
                      for name, shape in SHAPES.items() if shape(fn)]
    assert not found, "the library holds chapter 09 answers:\n" + "\n".join(found)


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_shapes_recognise_the_references_even_renamed(name):
    module = ex.registry()[CHAPTER_09[name]].stubs[name].__module__
    path = ROOT / "solutions" / Path(*module.split(".")[1:]).with_suffix(".py")
    (fn,) = [f for f in _functions(ast.parse(path.read_text())) if f.name == name]
    fn.name = "something_else"
    assert SHAPES[name](fn), f"the {name} shape does not recognise the reference in {path.relative_to(ROOT)}"
