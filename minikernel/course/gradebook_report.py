"""The gradebook's three outputs: ``gradebook.csv``, ``gradebook.html``, ``feedback/``.

Points: an exercise earns its weight when it grades PASS, nothing otherwise
(FAIL, TODO, BLOCKED, or a submission that could not be graded).
"""
from __future__ import annotations

import csv
import html
import re
from pathlib import Path
from typing import Protocol


class ResultLike(Protocol):
    student: str
    verdicts: dict[str, dict]
    error: str
    notes: list[str]


def points(result: ResultLike, exercise_id: str, weights: dict[str, float]) -> float:
    verdict = result.verdicts.get(exercise_id, {})
    return weights[exercise_id] if verdict.get("status") == "PASS" else 0.0


def _number(x: float) -> str:
    return f"{x:g}"


def write_csv(path: Path, results: list[ResultLike], ids: list[str], weights: dict[str, float]) -> None:
    """One row per student: points per exercise, total, maximum, and what went wrong."""
    maximum = sum(weights[i] for i in ids)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *ids, "total", "max", "note"])
        for r in results:
            earned = [points(r, i, weights) for i in ids]
            writer.writerow([r.student, *map(_number, earned), _number(sum(earned)), _number(maximum),
                             "; ".join(filter(None, [r.error, *r.notes]))])


_COLOURS = {"PASS": "#d1f0d8", "FAIL": "#fbd3d0", "TODO": "#fff1c1", "BLOCKED": "#e6dcfb", "": "#eeeeee"}
_SCRIPT = """
function sortBy(col) {
  const body = document.querySelector('#book tbody');
  const rows = Array.from(body.rows);
  const asc = body.dataset.col == col ? body.dataset.asc != 'true' : true;
  const key = r => r.cells[col].dataset.sort;
  rows.sort((a, b) => { const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
    const c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y); return asc ? c : -c; });
  rows.forEach(r => body.appendChild(r)); body.dataset.col = col; body.dataset.asc = asc;
}
function show(cell) {
  document.getElementById('detail-title').textContent = cell.dataset.title;
  document.getElementById('detail').textContent = cell.dataset.detail || '(no message)';
}
"""


def _cell(text: str, sort: str, title: str = "", detail: str = "", colour: str = "") -> str:
    attrs = f' data-sort="{html.escape(sort)}"'
    if title:
        attrs += f' data-title="{html.escape(title)}" data-detail="{html.escape(detail)}" onclick="show(this)"'
    if colour:
        attrs += f' style="background:{colour};cursor:pointer"'
    return f"<td{attrs}>{html.escape(text)}</td>"


#: How many of an exercise's most frequent failing tests the class summary lists.
TOP_FAILING_TESTS = 3


def class_summary(results: list[ResultLike], ids: list[str]) -> list[dict]:
    """Per exercise: how many submissions passed, each status counted, and the tests that
    failed most often (how many submissions, one student's smallest failing input).

    A FAIL names its test in the verdict's ``fields`` (the grader's ``--json``); one
    without a test (a hang, a crash) counts under its first detail line.
    """
    summary = []
    for i in ids:
        counts = {"PASS": 0, "FAIL": 0, "TODO": 0, "BLOCKED": 0, "": 0}
        failing: dict[str, dict] = {}
        for r in results:
            verdict = r.verdicts.get(i, {})
            status = verdict.get("status", "")
            counts[status if status in counts else ""] += 1
            if status != "FAIL":
                continue
            fields = verdict.get("fields") or {}
            detail = verdict.get("detail", "")
            test = fields.get("test") or (detail.splitlines() or ["(no message)"])[0]
            entry = failing.setdefault(test, {"test": test, "count": 0, "student": "", "input": "", "error": ""})
            entry["count"] += 1
            example = "\n".join(fields.get("input") or [])
            if not entry["student"] or (example and not entry["input"]):  # the first with an input is the example
                message = (fields.get("error") or detail).strip()
                entry.update(student=r.student, input=example, error=message.splitlines()[0] if message else "")
        top = sorted(failing.values(), key=lambda e: (-e["count"], e["test"]))[:TOP_FAILING_TESTS]
        summary.append({"id": i, "passed": counts["PASS"], "total": len(results), "counts": counts, "failing": top})
    return summary


def summary_html(summary: list[dict]) -> str:
    """The class summary as an HTML table: one row per exercise."""
    rows = []
    for row in summary:
        counts = row["counts"]
        others = ", ".join(f"{counts[k]} {k}" for k in ("FAIL", "TODO", "BLOCKED") if counts[k])
        if counts[""]:
            others += (", " if others else "") + f"{counts['']} not graded"
        tests = []
        for e in row["failing"]:
            example = f"<pre>{html.escape(e['input'])}</pre>" if e["input"] else ""
            error = f"<br><small>{html.escape(e['error'][:200])}</small>" if e["error"] else ""
            tests.append(f"<li><b>{e['count']}×</b> {html.escape(e['test'])}{error}"
                         f"<br><small>e.g. {html.escape(e['student'])}:</small>{example}</li>")
        failing = f"<ul style='margin:0;padding-left:1.2em'>{''.join(tests)}</ul>" if tests else "—"
        share = f"{row['passed']}/{row['total']}"
        rows.append(f"<tr><td>{html.escape(row['id'])}</td><td data-sort='{row['passed']}'>{share}</td>"
                    f"<td>{html.escape(others) or '—'}</td><td style='text-align:left'>{failing}</td></tr>")
    return ("<table id='summary'><thead><tr><th>exercise</th><th>passed</th><th>the others</th>"
            "<th>tests failed most often (one example input each)</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def write_html(path: Path, results: list[ResultLike], ids: list[str], weights: dict[str, float]) -> None:
    """A table sortable by any column (click its header); click a cell for the grader's message."""
    columns = ["student", *ids, "total"]
    head = "".join(f'<th onclick="sortBy({k})" style="cursor:pointer">{html.escape(c)}</th>'
                   for k, c in enumerate(columns))
    rows = []
    for r in results:
        cells = [_cell(r.student, r.student, r.student, "\n".join(filter(None, [r.error, *r.notes])))]
        for i in ids:
            verdict = r.verdicts.get(i, {})
            status = verdict.get("status", "")
            detail = verdict.get("detail", "") or r.error
            cells.append(_cell(f"{status or '—'} {_number(points(r, i, weights))}", status,
                               f"{r.student} · exercise {i} · {status or 'not graded'}", detail, _COLOURS[status]))
        total = sum(points(r, i, weights) for i in ids)
        cells.append(_cell(_number(total), _number(total)))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    maximum = _number(sum(weights[i] for i in ids))
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>minikernel gradebook</title>
<style>body{{font-family:sans-serif}} td,th{{border:1px solid #ccc;padding:2px 6px;text-align:center}}
table{{border-collapse:collapse}} pre{{white-space:pre-wrap;background:#f6f8fa;padding:8px}}</style>
<script>{_SCRIPT}</script></head><body>
<h1>Gradebook</h1><p>{len(results)} submissions, {len(ids)} exercises, {maximum} points in all.
Click a column header to sort; click a cell for what the grader said.</p>
<h2>Class summary</h2>
<p>Per exercise: how many submissions passed, and the tests that failed most often, each with one
submission's smallest failing input.</p>
{summary_html(class_summary(results, ids))}
<h2>Submissions</h2>
<table id="book"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>
<h2 id="detail-title"></h2><pre id="detail"></pre>
</body></html>
"""
    path.write_text(page)


def safe_filename(student: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", student) or "student"


def write_feedback(folder: Path, results: list[ResultLike], ids: list[str], weights: dict[str, float]) -> None:
    """``folder/<student>.txt``: per exercise the verdict, the points and the grader's message."""
    folder.mkdir(parents=True, exist_ok=True)
    maximum = sum(weights[i] for i in ids)
    for r in results:
        lines = [f"minikernel feedback for {r.student}", ""]
        if r.error:
            lines += [r.error, ""]
        lines += [f"note: {n}" for n in r.notes]
        for i in ids:
            verdict = r.verdicts.get(i, {})
            status = verdict.get("status", "not graded")
            lines.append(f"{i:<6} {verdict.get('name', ''):<28} {status:<8} "
                         f"{_number(points(r, i, weights))}/{_number(weights[i])}")
            if verdict.get("detail") and status != "PASS":
                lines += ["       " + line for line in verdict["detail"].splitlines()]
        total = sum(points(r, i, weights) for i in ids)
        lines += ["", f"total: {_number(total)}/{_number(maximum)}"]
        (folder / f"{safe_filename(r.student)}.txt").write_text("\n".join(lines) + "\n")
