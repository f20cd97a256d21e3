"""Gradescope's autograder ``results.json`` from one gradebook row.

Gradescope runs ``run_autograder`` for each submission and reads
``/autograder/results/results.json``: a top-level ``score`` and one entry per test
with ``name``, ``number``, ``score``, ``max_score``, ``status`` (``passed`` or
``failed``), ``output`` (shown in a ``<pre>``) and ``visibility``. Here one
exercise is one test, worth its points from the weights file (as in
``gradebook.csv``): all of them when it grades PASS, none otherwise.

    python -m minikernel gradebook /autograder/submission --single --format gradescope --out /autograder/results
"""
from __future__ import annotations

import json
from pathlib import Path

from .gradebook_report import ResultLike, points

#: The values Gradescope accepts for ``visibility``.
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


def results_json(result: ResultLike, ids: list[str], weights: dict[str, float],
                 visibility: str = "visible") -> dict:
    """The ``results.json`` object for ``result``: one test per exercise of ``ids``."""
    if visibility not in VISIBILITIES:
        raise ValueError(f"Gradescope's visibility is one of {', '.join(VISIBILITIES)}, not {visibility!r}")
    tests = []
    for i in ids:
        verdict = result.verdicts.get(i, {})
        status = verdict.get("status", "")
        lines = [status or "not graded"]
        if status != "PASS":
            lines += [text for text in (verdict.get("detail", ""), "" if verdict else result.error) if text]
        name = verdict.get("name", "")
        tests.append({
            "name": f"exercise {i}" + (f" ({name})" if name else ""),
            "number": i,
            "score": points(result, i, weights),
            "max_score": weights[i],
            "status": "passed" if status == "PASS" else "failed",
            "output": "\n".join(lines),
            "visibility": visibility,
        })
    report = {"score": sum(t["score"] for t in tests), "tests": tests, "visibility": visibility}
    output = "\n".join(filter(None, [result.error, *result.notes]))
    if output:
        report["output"] = output
    return report


def write_results(path: Path, result: ResultLike, ids: list[str], weights: dict[str, float],
                  visibility: str = "visible") -> None:
    """Write ``results.json`` for ``result`` at ``path`` (its folder is made if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results_json(result, ids, weights, visibility), indent=1) + "\n")
