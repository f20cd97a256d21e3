"""Find and read the wrong-solution cases of ``tests/wrong/chNN/``."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Case:
    """One wrong body: the file, the exercise it replaces, its one-line mistake."""

    path: Path
    exercise: str
    mistake: str
    functions: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}"


def read_case(path: Path) -> Case:
    tree = ast.parse(path.read_text(), str(path))
    exercise = next((n.value.value for n in tree.body if isinstance(n, ast.Assign)
                     and [getattr(t, "id", None) for t in n.targets] == ["EXERCISE"]
                     and isinstance(n.value, ast.Constant)), "")
    doc = (ast.get_docstring(tree) or "").strip().splitlines()
    functions = tuple(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_"))
    return Case(path, exercise, doc[0] if doc else "", functions)


def all_cases() -> list[Case]:
    return [read_case(p) for p in sorted(HERE.glob("ch[0-9][0-9]/*.py"))]
