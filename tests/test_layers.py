"""The package's layers: imports point down only.

The import graph of ``minikernel`` is built from the source with ``ast`` (module-level
imports and imports inside functions alike; ``if TYPE_CHECKING:`` blocks are not
imports at run time). Three rules:

* the library (everything outside ``minikernel/course/``) imports nothing from
  ``minikernel.course`` except the exercise marker ``minikernel.course.exercise``;
* no import cycle;
* no import inside a function in the library (it would hide a cycle, or a layer
  violation, until the function runs).

``AUTOGRAD_CORE`` (empty) would list modules allowed in a cycle; ``LOCAL_IMPORTS_LEFT`` the
last library modules that still import inside a function.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "minikernel"
COURSE = "minikernel.course"
MARKER = "minikernel.course.exercise"

#: Modules allowed in an import cycle: none since autograd became a package of
#: layered modules (the set stays so a future exception is explicit and reviewed).
AUTOGRAD_CORE: frozenset[str] = frozenset()
#: Library modules that still import inside functions without a cycle behind it. To be
#: emptied by moving those imports to the top; nothing may be added.
LOCAL_IMPORTS_LEFT = frozenset({"minikernel.kernels.jit", "minikernel.distributed.examples"})
#: Where the course reaches into the library's namespace on purpose: the package's
#: front door re-exports ``grade`` for notebooks, and ``python -m minikernel`` is the
#: course's command line (it imports each command only when that command is chosen).
ENTRY_POINTS = {"minikernel": {"minikernel.course.grading"}, "minikernel.__main__": None}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _targets(module: str, node: ast.Import | ast.ImportFrom, is_package: bool) -> list[str]:
    """The minikernel modules an import statement loads (the longest known prefix)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".") if is_package else module.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    out = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """(target, line, inside a function) for every import of a minikernel module."""
    found: list[tuple[str, int, bool]] = []
    is_package = path.name == "__init__.py"

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.extend((t, child.lineno, in_function) for t in _targets(module, child, is_package))
            elif _is_type_checking(child):
                for alternative in child.orelse:  # the else branch does run
                    visit(alternative, in_function)
            else:
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


IMPORTS = {m: _imports(m, p) for m, p in MODULES.items()}


def _in_course(module: str) -> bool:
    return module == COURSE or module.startswith(COURSE + ".")


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)
    return components


def test_the_graph_sees_the_package():
    # Guards the checks below against passing vacuously on an empty or unparsed graph.
    assert {"minikernel.strides", "minikernel.tensor", MARKER, "minikernel.course.grading"} <= set(MODULES)
    assert MARKER in {t for t, _, _ in IMPORTS["minikernel.strides"]}


def test_the_library_imports_only_the_exercise_marker_from_the_course():
    wrong = []
    for module, imports in IMPORTS.items():
        if _in_course(module):
            continue
        allowed = ENTRY_POINTS.get(module, set())
        for target, line, _ in imports:
            if _in_course(target) and target != MARKER and (allowed is not None and target not in allowed):
                wrong.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}")
    assert not wrong, ("the library must not import the course machinery (only minikernel.course.exercise); "
                       "move the shared code down into the library, or the import up into minikernel/course/:\n"
                       + "\n".join(wrong))


PACKAGES = {m for m, p in MODULES.items() if p.name == "__init__.py"}

def _ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _edges_with_package_inits(imports: dict, packages: set[str]) -> dict[str, set[str]]:
    """The import graph as Python runs it: importing ``a.b.c`` first runs ``a/__init__.py`` and
    ``a/b/__init__.py`` — except the packages the importer sits in, whose ``__init__`` is already
    running (and the root package, whose ``__init__`` always runs first)."""
    edges = {}
    for module, found in imports.items():
        targets = set()
        for target, _, _ in found:
            targets.add(target)
            targets |= {p for p in _ancestors(target) if p in packages and "." in p} - _ancestors(module) - {module}
        edges[module] = targets
    return edges


def test_no_import_cycles_with_package_inits():
    # Such a cycle is an import-order rule: it works only if something imports the package first.
    cycles = _cycles(_edges_with_package_inits(IMPORTS, PACKAGES))
    assert not cycles, ("import cycles through package __init__ files (importing a.b runs a/__init__.py; "
                        "a package's __init__ should only re-export modules that sit above what imports "
                        "the package):\n" + "\n".join(" <-> ".join(sorted(c)) for c in cycles))


def test_the_package_init_model():
    imports = {"p": [("p.low", 1, False)], "p.low": [], "p.high": [("q", 1, False)],
               "q": [("p.low", 1, False)], "p.x.y": [("p.x.z", 1, False)], "p.x": [("p.x.y", 1, False)],
               "p.x.z": []}
    edges = _edges_with_package_inits(imports, {"p", "p.x"})
    assert edges["q"] == {"p.low"}  # the root package's __init__ has already run
    assert _cycles(edges) == []  # p.x.y importing its sibling does not re-run p/x/__init__.py
    imports["q"] = [("p.x.z", 1, False)]
    imports["p.x"] = [("p.x.y", 1, False), ("q", 1, False)]
    assert _cycles(_edges_with_package_inits(imports, {"p", "p.x"})) == [{"p.x", "q"}]


def test_no_import_cycles():
    edges = {m: {t for t, _, _ in imports} for m, imports in IMPORTS.items()}
    cycles = [c for c in _cycles(edges) if not c <= AUTOGRAD_CORE]
    assert not cycles, ("import cycles (a module that needs another's names at import time must sit above it; "
                        "move what both need into a lower module):\n"
                        + "\n".join(" <-> ".join(sorted(c)) for c in cycles))


def test_the_allowances_only_shrink():
    # When a module leaves the cycle (or stops importing inside functions), take it off
    # its allowance, so that it cannot slip back.
    edges = {m: {t for t, _, _ in imports} for m, imports in IMPORTS.items()}
    in_cycles = set().union(set(), *_cycles(edges))
    with_local = {m for m, imports in IMPORTS.items() if any(inside for _, _, inside in imports)}
    assert not AUTOGRAD_CORE - in_cycles, (
        f"no longer in an import cycle: {sorted(AUTOGRAD_CORE - in_cycles)}; remove them from AUTOGRAD_CORE")
    assert not LOCAL_IMPORTS_LEFT - with_local, (
        f"no longer import inside functions: {sorted(LOCAL_IMPORTS_LEFT - with_local)}; "
        "remove them from LOCAL_IMPORTS_LEFT")


def test_no_function_local_imports_in_the_library():
    allowed = AUTOGRAD_CORE | LOCAL_IMPORTS_LEFT | {m for m, a in ENTRY_POINTS.items() if a is None}
    local = [f"{MODULES[m].relative_to(ROOT)}:{line} imports {target} inside a function"
             for m, imports in IMPORTS.items() if not _in_course(m) and m not in allowed
             for target, line, inside in imports if inside]
    assert not local, ("import at the top of the module; if that makes a cycle, the modules are in the wrong "
                       "layers:\n" + "\n".join(local))


@pytest.mark.parametrize("source, expected", [
    ("from . import strides\n", [("minikernel.strides", False)]),
    ("def f():\n    from .course import grading\n", [("minikernel.course.grading", True)]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .course import lab\n", []),
])
def test_the_import_reader(tmp_path, source, expected):
    path = tmp_path / "__init__.py"
    path.write_text(source)
    assert [(t, inside) for t, _, inside in _imports("minikernel", path)] == expected


def test_the_cycle_finder():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [{"a", "b", "c"}]


# ------------------------------------------------------- numba after the GPU/simulator choice
NUMBA_SETUP = "minikernel.numba_setup"
#: numba loads it as its memory manager (``NUMBA_CUDA_MEMORY_MANAGER``, set by ``device.py``):
#: numba is being imported, after the choice, when this module runs.
LOADED_BY_NUMBA = {"minikernel.cuda_allocator"}


def _numba_imports(path: Path) -> list[int]:
    """The lines of a module's imports of numba (``import numba``, ``from numba.x import y``)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        if any(n == "numba" or n.startswith("numba.") for n in names):
            lines.append(node.lineno)
    return lines


def _imports_setup_first(module: str) -> int:
    """The line of ``module``'s first import of numba_setup, or 0 when another minikernel module comes first."""
    found = sorted((line, target) for target, line, inside in IMPORTS[module] if not inside)
    return found[0][0] if found and found[0][1] == NUMBA_SETUP else 0


def _numba_after_the_choice(module: str, numba_lines: list[int]) -> bool:
    """Whether numba_setup has run before ``module``'s numba imports: the module imports it
    above them, or a package it sits in (below the root) imports it before anything else."""
    if module in (NUMBA_SETUP, "minikernel.device") or module in LOADED_BY_NUMBA:
        return True  # device.py makes the choice on import and imports numba only inside functions
    own = [line for target, line, inside in IMPORTS.get(module, ()) if target == NUMBA_SETUP and not inside]
    if own and min(own) < min(numba_lines):
        return True
    return any(_imports_setup_first(p) for p in _ancestors(module) if p in PACKAGES and "." in p)


def test_numba_is_imported_after_the_simulator_choice():
    # numba reads NUMBA_ENABLE_CUDASIM when first imported: whichever module an import starts
    # from, device.py (through numba_setup.py) must have chosen by then.
    wrong = [f"{MODULES[m].relative_to(ROOT)}:{min(lines)} imports numba before minikernel.numba_setup ran"
             for m, path in MODULES.items() if not _in_course(m)
             for lines in [_numba_imports(path)] if lines and not _numba_after_the_choice(m, lines)]
    assert not wrong, ("take numba from minikernel.numba_setup (it imports device.py first), or import "
                       "that module first in the package's __init__:\n" + "\n".join(wrong))


def test_the_numba_order_check_can_fail(tmp_path):
    # A module of a package that does not import numba_setup, importing numba itself, is caught.
    path = tmp_path / "m.py"
    path.write_text("import numba\nfrom .. import numba_setup\n")
    assert _numba_imports(path) == [1]
    MODULES["minikernel.aten.fake"], IMPORTS["minikernel.aten.fake"] = path, [(NUMBA_SETUP, 2, False)]
    try:
        assert not _numba_after_the_choice("minikernel.aten.fake", [1])
        IMPORTS["minikernel.aten.fake"] = [(NUMBA_SETUP, 1, False)]
        assert _numba_after_the_choice("minikernel.aten.fake", [2])
        assert _numba_after_the_choice("minikernel.kernels.fake", [1])  # kernels/__init__.py imports it first
    finally:
        del MODULES["minikernel.aten.fake"], IMPORTS["minikernel.aten.fake"]
