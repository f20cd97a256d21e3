"""The grader's verdicts: one row per exercise, from what its tests recorded.

* PASS     every test of the exercise passes;
* FAIL     a test fails, or the exercise's process hung or crashed;
* TODO     the stub is untouched (its NotImplementedError was raised);
* BLOCKED  the exercise's code calls another exercise that is still TODO.
"""
from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field

from . import exercise as ex


@dataclass
class CaseResult:
    """What the pytest plugin records for one test (see ``grade_plugin``)."""

    nodeid: str
    exercises: list[str]
    outcome: str  # passed | failed | skipped
    stub: str | None = None  # exercise ID named by a stub's NotImplementedError
    detail: str = ""
    words: str = ""  # the test in words ("view strides like torch")
    fields: dict = field(default_factory=dict)  # test, input, expected, got, where, error


@dataclass
class Row:
    """One exercise's verdict. ``fields`` (FAIL and BLOCKED) are the parts of ``detail``."""

    id: str
    name: str
    status: str  # PASS | FAIL | TODO | BLOCKED
    detail: str = ""
    fields: dict = field(default_factory=dict)
    seconds: float | None = None  # wall-clock time of the exercise's process


def blocked_detail(blockers: list[str]) -> tuple[str, dict]:
    """``needs exercise 1.3 (to_index) in minikernel/strides.py``, for each blocker."""
    registry = ex.registry()
    parts, where = [], []
    for b in blockers:
        entry = registry.get(b)
        if entry is None:
            parts.append(f"exercise {b} (not implemented yet)")
            continue
        path = f"minikernel/{entry.module.replace('.', '/')}.py"
        parts.append(f"exercise {b} ({entry.name}) in {path}, not implemented yet")
        where.append(path)
    return "needs " + "; ".join(parts), {"blocked_by": blockers, "files": where}


def classify(exercise_id: str, results: list[CaseResult]) -> tuple[str, str, dict]:
    """The verdict, its detail and the detail's fields for one exercise, from the
    results of the tests that carry its marker."""
    mine = [r for r in results if exercise_id in r.exercises]
    if not mine:
        return "FAIL", "no test carries this exercise's marker", {}
    failed = [r for r in mine if r.outcome == "failed"]
    if not failed:
        if all(r.outcome == "skipped" for r in mine):
            return "FAIL", "every test was skipped", {}
        return "PASS", "", {}
    if any(r.stub == exercise_id for r in failed):
        return "TODO", f"exercise {exercise_id} is not implemented yet", {}
    wrong = [r for r in failed if r.stub is None]
    if wrong:
        return "FAIL", wrong[0].detail or wrong[0].nodeid, dict(wrong[0].fields)
    blockers = sorted({r.stub for r in failed if r.stub}, key=ex.id_key)
    detail, fields = blocked_detail(blockers)
    return "BLOCKED", detail, fields


@dataclass
class GradeReport:
    """The grader's verdicts; renders as a text table, an HTML table, or JSON."""

    rows: list[Row]
    error: str = ""

    @property
    def passed(self) -> int:
        return sum(r.status == "PASS" for r in self.rows)

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def ok(self) -> bool:
        return not self.error and self.passed == self.total

    def to_json(self) -> dict:
        out = {"exercises": [asdict(r) for r in self.rows], "passed": self.passed, "total": self.total}
        if self.error:
            out["error"] = self.error
        return out

    def __str__(self) -> str:
        width = max([len(r.name) for r in self.rows] + [8])
        lines = [f"{'exercise':<9} {'name':<{width}} {'status':<8} detail"]
        indent = " " * (9 + 1 + width + 1 + 8 + 1)
        for r in self.rows:
            first, *rest = (r.detail or "").splitlines() or [""]
            lines.append(f"{r.id:<9} {r.name:<{width}} {r.status:<8} {first}".rstrip())
            lines += [f"{indent}{line}".rstrip() for line in rest]
        if self.error:
            lines.append(f"error: {self.error}")
        lines.append(f"{self.passed}/{self.total} passed")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colours = {"PASS": "#1a7f37", "FAIL": "#cf222e", "TODO": "#9a6700", "BLOCKED": "#8250df"}
        cells = "".join(
            f"<tr><td>{r.id}</td><td><code>{html.escape(r.name)}</code></td>"
            f"<td style='color:{colours[r.status]};font-weight:bold'>{r.status}</td>"
            f"<td style='text-align:left'><pre style='margin:0;white-space:pre-wrap'>"
            f"{html.escape(r.detail)}</pre></td></tr>"
            for r in self.rows)
        error = f"<p style='color:#cf222e'>{html.escape(self.error)}</p>" if self.error else ""
        return (f"<table><tr><th>exercise</th><th>name</th><th>status</th><th>detail</th></tr>"
                f"{cells}</table>{error}<p><b>{self.passed}/{self.total} passed</b></p>")
