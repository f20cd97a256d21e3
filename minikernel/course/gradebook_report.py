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
