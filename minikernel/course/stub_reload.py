"""Your saved edits, picked up by a running kernel without a restart.

``notebook_display.install()`` calls ``reload_changed()`` before every cell. When a
file that holds exercises (``minikernel/strides.py``, ...) was saved since the kernel
last looked, its functions are reloaded *in place*:

* each top-level ``def`` of the file that the module already has as a plain function
  (your exercise's stub included) gets the new code: the function object stays the
  same, so every module that imported it by name (``from .strides import
  index_to_position``) and every ``minikernel.Tensor`` method calls the new body;
* a ``def`` the module does not have yet (a helper you added) and the file's
  ``import`` lines are run in the module, so your exercise can use them;
* the kernels numba compiled from the old code are dropped, so the next call compiles
  your new code (chapter 02, 05).

Nothing else in the file is run again: a class, a constant or a decorator you change
needs a kernel restart (Kernel > Restart), and a file that does not parse is not
loaded (``reload_changed`` says where the error is; the old code stays).
An exercise switched to its reference (``MINIKERNEL_SOLUTIONS``) keeps the reference.
"""
from __future__ import annotations

import ast
import hashlib
import importlib
import linecache
import os
import sys
import types
from dataclasses import dataclass

from . import exercise as ex


@dataclass
class Reloaded:
    """What one reload did: the file (relative to the course) and the functions updated."""

    path: str
    functions: list[str]
    error: str | None = None

    def __str__(self) -> str:
        if self.error:
            return f"Not reloaded: {self.path} has an error ({self.error}); fix it and run the cell again."
        return f"Reloaded your saved {self.path}: {', '.join(self.functions) or 'no function changed'}."


_seen: dict[str, tuple[float, int, str]] = {}  #: file -> (mtime, size, sha256) last loaded


def learner_modules() -> dict[str, types.ModuleType]:
    """Real path of each file that holds exercises -> its module."""
    found = {}
    for entry in ex.registry().values():
        module = importlib.import_module(f"minikernel.{entry.module}")
        if getattr(module, "__file__", None):
            found[os.path.realpath(module.__file__)] = module
    return found


def _stamp(path: str) -> tuple[float, int]:
    st = os.stat(path)
    return st.st_mtime, st.st_size


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def remember() -> None:
    """Take every learner file as it is now as the loaded version (at ``install()``)."""
    for path in learner_modules():
        try:
            with open(path, encoding="utf-8") as f:
                _seen[path] = (*_stamp(path), _digest(f.read()))
        except OSError:
            continue


def reload_changed() -> list[Reloaded]:
    """Reload, in place, every learner file saved since the last call (module doc)."""
    done = []
    for path, module in learner_modules().items():
        try:
            stamp = _stamp(path)
        except OSError:
            continue
        known = _seen.get(path)
        if known is not None and known[:2] == stamp:
            continue
        with open(path, encoding="utf-8") as f:
            source = f.read()
        digest = _digest(source)
        _seen[path] = (*stamp, digest)
        if known is None or known[2] == digest:
            continue  # first look, or touched without a change
        done.append(reload_source(module, path, source))
    if any(r.functions for r in done):
        forget_compiled()
    return done


def _stubs_by_name(module: types.ModuleType) -> dict[str, types.FunctionType]:
    relative = module.__name__.partition(".")[2]
    return {name: stub for entry in ex.registry().values() if entry.module == relative
            for name, stub in entry.stubs.items()}


def reload_source(module: types.ModuleType, path: str, source: str) -> Reloaded:
    """Load ``source`` (the saved text of ``module``'s file ``path``) into ``module`` in place."""
    shown = module.__name__.replace(".", "/") + ".py"
    try:
        tree = ast.parse(source, path)
    except SyntaxError as err:
        return Reloaded(shown, [], f"{type(err).__name__} at line {err.lineno}: {err.msg}")
    linecache.checkcache(path)
    futures = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and n not in futures]
    stubs = _stubs_by_name(module)
    namespace = module.__dict__
    try:
        if imports:
            exec(compile(ast.Module(futures + imports, []), path, "exec"), namespace)  # noqa: S102
    except Exception as err:  # noqa: BLE001 - an import that fails is the learner's to fix
        return Reloaded(shown, [], f"{type(err).__name__}: {err}")
    updated = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        old = stubs.get(node.name, namespace.get(node.name))
        is_ours = isinstance(old, types.FunctionType) and os.path.realpath(old.__code__.co_filename) == path
        if old is not None and not is_ours:
            continue  # decorated by something else, or not defined in this file: needs a restart
        bare = ast.copy_location(ast.FunctionDef(**{**{f: getattr(node, f) for f in node._fields},
                                                    "decorator_list": []}), node)
        code = compile(ast.Module(futures + [bare], []), path, "exec")
        if old is None:  # a new helper: defined in the module itself
            exec(code, namespace)  # noqa: S102
            updated.append(node.name)
            continue
        scratch = dict(namespace)
        exec(code, scratch)  # noqa: S102
        new = scratch[node.name]
        if old.__code__.co_freevars == new.__code__.co_freevars:
            if not _same(old, new):
                updated.append(node.name)
            old.__code__, old.__defaults__, old.__kwdefaults__ = new.__code__, new.__defaults__, new.__kwdefaults__
            old.__doc__, old.__annotations__ = new.__doc__, new.__annotations__
    return Reloaded(shown, updated)


def _same(old: types.FunctionType, new: types.FunctionType) -> bool:
    """Whether two versions of a function do the same (its place in the file aside)."""
    a, b = old.__code__, new.__code__
    return ((a.co_code, a.co_names, a.co_varnames, old.__defaults__)
            == (b.co_code, b.co_names, b.co_varnames, new.__defaults__)
            and [c for c in a.co_consts if not isinstance(c, types.CodeType)]
            == [c for c in b.co_consts if not isinstance(c, types.CodeType)])


def forget_compiled() -> None:
    """Drop what numba compiled from the learner's old code (``minikernel.kernels.jit``'s
    caches, the helpers that kernel modules bound at import, every kernel's compiled
    dispatcher), so the next call compiles the current code."""
    jit = sys.modules.get("minikernel.kernels.jit")
    if jit is None:
        return
    old = {id(dispatcher): key for key, dispatcher in jit._compiled_helpers.items()}
    jit._compiled_helpers.clear()
    jit._stub_messages.clear()
    for name, module in list(sys.modules.items()):
        if not name.startswith("minikernel.") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if id(value) in old:  # a helper bound at import (kernels/cpu.py's index_to_position)
                setattr(module, attr, jit.helper(*old[id(value)]))
            for kernel in _kernels_in(value, jit.Kernel):
                kernel._compiled_for = None


def _kernels_in(value, kernel_class, depth: int = 0):
    if isinstance(value, kernel_class):
        yield value
    elif isinstance(value, dict) and depth < 2:
        for item in list(value.values()):
            yield from _kernels_in(item, kernel_class, depth + 1)
