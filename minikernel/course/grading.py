"""The grader: run the exercise tests, one verdict per exercise.

``python -m minikernel grade [IDs|globs] [--json]`` and ``minikernel.grade("1.*")``
run ``tests/chNN`` in a fresh interpreter (so edits to your files count without a
kernel restart) and report, per exercise:

* PASS     every test of the exercise passes;
* FAIL     a test fails; the detail shows the first failing case (shrunk by hypothesis);
* TODO     the stub is untouched (its NotImplementedError was raised);
* BLOCKED  your code calls another exercise that is still TODO.

Which code runs (yours or the reference) follows ``MINIKERNEL_SOLUTIONS`` as usual.
"""
from __future__ import annotations

import argparse
import html
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from . import exercise as ex

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PER_TEST_TIMEOUT_S = 30  # a learner's infinite loop fails its test instead of hanging


@dataclass
class Row:
    id: str
    name: str
    status: str  # PASS | FAIL | TODO | BLOCKED
    detail: str = ""


@dataclass
class CaseResult:
    """What the pytest plugin records for one test (see ``grade_plugin``)."""

    nodeid: str
    exercises: list[str]
    outcome: str  # passed | failed | skipped
    stub: str | None = None  # exercise ID named by a stub's NotImplementedError
    detail: str = ""


def classify(exercise_id: str, results: list[CaseResult]) -> tuple[str, str]:
    """The verdict for one exercise from the results of the tests that carry its marker."""
    mine = [r for r in results if exercise_id in r.exercises]
    if not mine:
        return "FAIL", "no test carries this exercise's marker"
    failed = [r for r in mine if r.outcome == "failed"]
    if not failed:
        if all(r.outcome == "skipped" for r in mine):
            return "FAIL", "every test was skipped"
        return "PASS", ""
    if any(r.stub == exercise_id for r in failed):
        return "TODO", f"exercise {exercise_id} is not implemented yet"
    wrong = [r for r in failed if r.stub is None]
    if wrong:
        return "FAIL", f"{wrong[0].nodeid.split('::')[-1]}: {wrong[0].detail}"
    blockers = sorted({r.stub for r in failed if r.stub}, key=ex.id_key)
    return "BLOCKED", "needs " + ", ".join(f"exercise {b} (not implemented yet)" for b in blockers)


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
        lines += [f"{r.id:<9} {r.name:<{width}} {r.status:<8} {r.detail}".rstrip() for r in self.rows]
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


def _test_paths(ids: list[str]) -> list[str]:
    chapters = sorted({int(i.split(".")[0]) for i in ids})
    paths = [TESTS / f"ch{c:02d}" for c in chapters]
    missing = [p for p in paths if not p.is_dir()]
    if missing:
        raise FileNotFoundError(f"the exercise tests are missing: {', '.join(map(str, missing))}. "
                                "The grader needs the course's tests/ folder next to minikernel/.")
    return [str(p) for p in paths]


def run(patterns: list[str] | None = None, timeout_s: int = PER_TEST_TIMEOUT_S) -> GradeReport:
    """Run the tests of the exercises that ``patterns`` select (all when empty)."""
    ids = ex.select(patterns)
    registry = ex.registry()
    with tempfile.TemporaryDirectory() as tmp:
        results_file = Path(tmp) / "results.json"
        cmd = [sys.executable, "-m", "pytest", *_test_paths(ids), "-q", "--no-header", "-p", "no:cacheprovider",
               "-p", "minikernel.course.grade_plugin", f"--mk-ids={','.join(ids)}", f"--mk-results={results_file}",
               f"--mk-timeout={timeout_s}", "-p", "no:timeout"]
        env = dict(os.environ, MINIKERNEL_GRADING="1", HYPOTHESIS_PROFILE="grade")
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if not results_file.exists():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            return GradeReport([Row(i, registry[i].name, "FAIL", "tests did not run") for i in ids],
                               error=f"pytest exited with {proc.returncode}:\n{tail}")
        data = json.loads(results_file.read_text())
    results = [CaseResult(**r) for r in data["results"]]
    error = "\n".join(data["collect_errors"])
    rows = []
    for i in ids:
        status, detail = classify(i, results)
        if error and status == "FAIL":
            detail = detail or "tests could not be collected"
        rows.append(Row(i, registry[i].name, status, detail))
    return GradeReport(rows, error=error)


def grade(*patterns: str) -> GradeReport:
    """Grade exercises from a notebook: ``minikernel.grade("1.*")`` shows a table.

    Args:
        *patterns: exercise IDs ("1.2") or chapter globs ("1.*"); none means all.
    """
    return run(list(patterns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikernel grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="*", help="exercise IDs or chapter globs, e.g. 1.2 '1.*' (default: all)")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    parser.add_argument("--timeout", type=int, default=PER_TEST_TIMEOUT_S, help="seconds per test")
    args = parser.parse_args(argv)
    try:
        report = run(args.patterns, args.timeout)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else report)
    return 0 if report.ok else 1
