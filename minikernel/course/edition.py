"""``python -m minikernel release OUT [--keep IDS]``: a student edition of the course.

A student edition is this course without its answers: the stubs, the chapters with
their stored outputs, the exercise tests and the grader — and no ``solutions/``
beyond the references a teacher chooses to ship (``--keep '1.*,2.3'``, so a class
can skip an exercise). Left out as well:

* ``teacher_tests/`` — tests only a teacher runs, at grading time (``gradebook``);
* ``tests/wrong/`` — the wrong-solution corpus, whose near-misses are near-answers;
* caches, virtual environments and build outputs.

In the edition ``solutions/__init__.py`` records ``KEPT``, the IDs whose
references it ships; asking ``MINIKERNEL_SOLUTIONS`` for any other one fails with
a message saying the references are not part of this edition.

``--github-classroom`` adds GitHub Classroom's autograding workflow
(``.github/workflows/classroom.yml``, see ``classroom``): one graded test per
exercise, worth its points from ``--weights`` (the gradebook's weights file).

Example::

    python -m minikernel release ../course-2026 --keep '2.3'
    python -m minikernel release ../course-2026 --github-classroom --weights weights.json
"""
from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
from pathlib import Path

from . import classroom, exercise as ex
from .weights import load_weights

ROOT = Path(__file__).resolve().parents[2]
TEACHER_TESTS = "teacher_tests"
#: Folders (relative to the course root) that never go into an edition.
LEFT_OUT_DIRS = ("solutions", TEACHER_TESTS, "tests/wrong", "tests/browser/artifacts", ".git", ".venv",
                 "build", "dist", "node_modules")
#: Folder names left out wherever they are.
LEFT_OUT_NAMES = ("__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints", ".mypy_cache",
                  ".ruff_cache")


def _left_out(rel: Path) -> bool:
    posix = rel.as_posix()
    if any(posix == d or posix.startswith(d + "/") for d in LEFT_OUT_DIRS):
        return True
    return any(part in LEFT_OUT_NAMES or part.endswith(".egg-info") for part in rel.parts)


def course_files(root: Path = ROOT) -> list[Path]:
    """The files an edition is made from, relative to ``root``.

    In a git checkout, the tracked files (so scratch files and caches never ship);
    otherwise every file under ``root``. Either way without what ``LEFT_OUT_DIRS``
    and ``LEFT_OUT_NAMES`` name.
    """
    if (root / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
        files = [Path(p) for p in listed.decode().split("\0") if p]
    else:
        files = [p.relative_to(root) for p in root.rglob("*") if p.is_file() or p.is_symlink()]
    return sorted(f for f in files if not _left_out(f) and (root / f).is_file())


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.value.id for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}


def _defined(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def keep_only(source: str, names: set[str]) -> str:
    """``source`` (a solutions module) reduced to the functions ``names`` and what they use.

    Kept: the docstring, every import, and the functions, classes and assignments
    that the kept functions reach by name (transitively). Everything else — the
    other exercises' references and their private helpers — is dropped.
    """
    tree = ast.parse(source)
    body = tree.body
    by_name = {name: stmt for stmt in body for name in _defined(stmt)}
    wanted, todo = set(), [n for n in names if n in by_name]
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        todo += [n for n in _names_used(by_name[name]) if n in by_name and n not in wanted]
    out = []
    for i, stmt in enumerate(body):
        docstring = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        is_import = isinstance(stmt, (ast.Import, ast.ImportFrom))
        if docstring or is_import or _defined(stmt) & wanted:
            gap = "\n" if is_import and out and out[-1][0] else "\n\n\n"
            out.append((is_import, (gap if out else "") + ast.get_source_segment(source, stmt, padded=True)))
    return "".join(text for _, text in out) + "\n"


def kept_ids(patterns: str) -> list[str]:
    """The exercise IDs that ``--keep`` names (IDs and chapter globs, as MINIKERNEL_SOLUTIONS)."""
    return ex.select(ex.parse_selection(patterns, where="--keep"), where="--keep") if patterns.strip() else []


def _write_references(out: Path, keep: list[str], root: Path) -> None:
    """``solutions/`` of the edition: its packages, ``KEPT``, and the kept references only."""
    registry = ex.registry()
    per_module: dict[str, set[str]] = {}
    for i in keep:
        per_module.setdefault(registry[i].module, set()).update(registry[i].stubs)
    for init in sorted((root / "solutions").rglob("__init__.py")):
        rel = init.relative_to(root)
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        text = init.read_text()
        if rel == Path("solutions/__init__.py"):
            text = (f'"""This student edition ships the references of {", ".join(keep) or "no exercise"} only."""\n\n'
                    f"EDITION = \"student\"\nKEPT = {tuple(keep)!r}\n")
        (out / rel).write_text(text)
    for module, names in per_module.items():
        rel = Path("solutions", *module.split(".")).with_suffix(".py")
        (out / rel).write_text(keep_only((root / rel).read_text(), names))


def release(out: Path, keep: str = "", root: Path = ROOT, force: bool = False) -> list[str]:
    """Write a student edition of the course at ``root`` into ``out``; return the kept IDs.

    Raises:
        FileExistsError: ``out`` exists and is not empty (pass ``force`` to replace it).
        ValueError: ``keep`` names no exercise.
    """
    ids = kept_ids(keep)
    out = out.resolve()
    if out == root.resolve() or root.resolve() in out.parents:
        raise ValueError(f"{out} is inside the course itself; choose a folder outside {root}")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise FileExistsError(f"{out} exists and is not empty; choose a new folder or pass --force")
        shutil.rmtree(out)
    for rel in course_files(root):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, out / rel)
    _write_references(out, ids, root)
    return ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikernel release",
                                     description="write a student edition of the course (no references)")
    parser.add_argument("out", type=Path, help="folder to write the edition into (new or empty)")
    parser.add_argument("--keep", default="", help="references to ship anyway, e.g. '1.*,2.3' (default: none)")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")
    parser.add_argument("--github-classroom", action="store_true",
                        help="add GitHub Classroom's autograding workflow (one test per exercise)")
    parser.add_argument("--weights", type=Path,
                        help='with --github-classroom: JSON file of points per ID or glob, e.g. {"2.*": 2}')
    args = parser.parse_args(argv)
    if args.weights and not args.github_classroom:
        print("error: --weights sets the points of --github-classroom's tests; add --github-classroom",
              file=sys.stderr)
        return 2
    try:
        if args.github_classroom:
            graded = ex.select(None)
            weights = load_weights(args.weights, graded)
            classroom.workflow(graded, weights, kept_ids(args.keep))  # stops before anything is written
        ids = release(args.out, args.keep, force=args.force)
        if args.github_classroom:
            written = classroom.write_workflow(args.out, graded, weights, ids)
            tests = [i for i in graded if i not in ids]
            print(f"GitHub Classroom autograding: {written} ({len(tests)} exercises, "
                  f"{sum(weights[i] for i in tests):g} points)")
    except (ValueError, FileExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"student edition written to {args.out} (references shipped: {', '.join(ids) or 'none'})")
    return 0
