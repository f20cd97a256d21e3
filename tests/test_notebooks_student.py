"""What a new learner sees: every chapter run top to bottom with no exercise written.

Each chapter runs once in student mode (``MINIKERNEL_SOLUTIONS`` empty) under nbval,
as a learner checks their notebook (README, "Check your notebook's outputs"), with
``nbval_record.py`` keeping every cell's outputs and verdict. From that one run:

* **every cell runs, and only the exercises stop it**: a cell may end in an error only
  when that error is an unfinished exercise's (its stub's ``NotImplementedError``, or a
  name that "waits for exercise N.M"); no other output shows a traceback;
* **nbval fails only the cells that need the learner's code**: every failing cell
  names an exercise, and each of the chapter's exercises is named by one;
* **one notice, everywhere**: a cell that reaches an unfinished exercise shows the
  exercise's box (``notebook_display``'s HTML panel), never the stub's error as
  printed text, nor the box's words printed as plain text, nor the stub's error
  without the box beside it.

nbval runs cells outside IPython's history, where the course's display hook lets the
exercise's error through so that nbval fails the cell; under JupyterLab's Run All the
same error becomes the exercise's box and the run goes on. That switch, and the box of
every exercise, are checked in tests/test_notebooks_display.py; Run All of chapter 01
in a real JupyterLab is a browser test.

A chapter takes a minute or more; ``-n 2`` runs two side by side.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from minikernel.course import exercise as ex

pytestmark = [pytest.mark.timeout(900), pytest.mark.own_mode]  # a chapter takes minutes on a busy machine
ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
# what IPython prints for a traceback, in any of its forms
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^-+> \d|Cell In\[\d+\]", re.MULTILINE)
EXERCISE = re.compile(r"exercise (\d+\.\d+)", re.IGNORECASE)  # the stub's error, or "waits for exercise 1.2"
STUB_ERROR = "is not implemented yet"  # the stubs' NotImplementedError message
BOX_WORDS = re.compile(r"is not written yet\.\n\s+Write ")  # todo_text: the box's plain-text form


def _texts(output: dict) -> list[str]:
    if output["output_type"] == "stream":
        return [output["text"]]
    return [v for k, v in output.get("data", {}).items() if k.startswith("text/") and isinstance(v, str)]


def _chapter_ids(notebook: Path) -> set[str]:
    number = int(notebook.name[:2])
    return {i for i in ex.registry() if int(i.split(".")[0]) == number}


def run_in_student_mode(notebook: Path, tmp_path: Path) -> list[dict]:
    """nbval on ``notebook`` with every stub untouched: one record per code cell."""
    record = tmp_path / "cells.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "--nbval-sanitize-with",
         str(CHAPTERS / "sanitize.cfg"), str(notebook), "-p", "no:cacheprovider", "-p", "no:randomly",
         "-p", "no:xdist", "-p", "tests.nbval_record", f"--record-cells={record}", "-q"],
        cwd=ROOT, env=dict(os.environ, MINIKERNEL_SOLUTIONS=""), capture_output=True, text=True, timeout=900)
    assert record.exists(), f"nbval did not run (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}"
    return json.loads(record.read_text())


def problems(cells: list[dict], code_cells: int, exercises: set[str]) -> list[str]:
    """What is wrong with a student-mode run (``nbval_record``'s cells); empty when all is well."""
    if len(cells) != code_cells:
        return [f"nbval ran {len(cells)} of the {code_cells} code cells"]
    found, named = [], set()
    for number, cell in enumerate(cells, 1):
        if cell["outcome"] == "skipped":
            found.append(f"code cell {number} did not run")
        ids = set(EXERCISE.findall(cell["failure"]))
        for output in cell["outputs"]:
            if output["output_type"] == "error":
                if not (ids and EXERCISE.search(output["evalue"])):
                    found.append(f"code cell {number} ends in an error that is no unfinished exercise's: "
                                 f"{output['ename']}: {output['evalue']}")
            elif any(TRACEBACK.search(text) for text in _texts(output)):
                found.append(f"code cell {number} shows a traceback")
        if cell["outcome"] == "failed":
            if not ids:
                found.append(f"code cell {number} fails under nbval without naming an exercise:\n"
                             f"{cell['failure'][:3000]}")
            named |= ids
    if exercises - named:
        found.append(f"no failing cell names exercise(s) {sorted(exercises - named, key=ex.id_key)}")
    return found + notice_problems(cells)


def _shows_box(output: dict) -> bool:
    return "is not written yet" in output.get("data", {}).get("text/html", "")


def notice_problems(cells: list[dict]) -> list[str]:
    """Cells that show an unfinished exercise other than as its box (module doc)."""
    found = []
    for number, cell in enumerate(cells, 1):
        boxed = any(_shows_box(o) for o in cell["outputs"])
        for output in cell["outputs"]:
            kind = output["output_type"]
            if kind == "stream" and STUB_ERROR in output["text"]:
                found.append(f"code cell {number} prints a stub's error as text instead of the exercise's box: "
                             f"{output['text'].strip().splitlines()[-1][:120]!r}")
            elif kind == "stream" and BOX_WORDS.search(output["text"]):
                found.append(f"code cell {number} prints the exercise's box as plain text; show the box "
                             "(notebook_display.show_todo)")
            elif kind == "error" and not boxed and STUB_ERROR in output["evalue"] + "".join(output["traceback"]):
                found.append(f"code cell {number} shows a stub's error without the exercise's box: "
                             f"{output['ename']}: {output['evalue'][:120]}")
            elif kind in ("display_data", "execute_result") and not _shows_box(output) and BOX_WORDS.search(
                    output.get("data", {}).get("text/plain", "")):
                found.append(f"code cell {number} shows the exercise's box as plain text only")
    return found


# One xdist group per chapter: under --dist loadgroup a module's tests without a group all
# go to one worker, and these ten take minutes together.
@pytest.mark.parametrize("notebook", [pytest.param(p, id=p.stem, marks=pytest.mark.xdist_group(p.stem))
                                      for p in NOTEBOOKS])
def test_student_mode_stops_only_at_exercises_and_nbval_fails_only_their_cells(notebook, tmp_path):
    cells = run_in_student_mode(notebook, tmp_path)
    code = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    found = problems(cells, len(code), _chapter_ids(notebook))
    assert not found, "\n".join(found)


def _cell(outcome="passed", failure="", outputs=()):
    return {"notebook": "x.ipynb", "cell": "Cell", "outcome": outcome, "failure": failure, "outputs": list(outputs)}


STUB = {"output_type": "error", "ename": "NotImplementedError",
        "evalue": "exercise 1.1 (contiguous_strides) is not implemented yet", "traceback": []}


BOX = {"output_type": "display_data", "metadata": {}, "data": {
    "text/plain": "Exercise 1.1 (contiguous_strides) is not written yet.\n  Write contiguous_strides in ...",
    "text/html": "<div><b>Exercise 1.1 (contiguous_strides) is not written yet.</b><br>Write ...</div>"}}


@pytest.mark.parametrize("cells, wrong", [
    ([_cell(), _cell("failed", "NotImplementedError: exercise 1.1 ...", [BOX, STUB])], None),
    ([_cell(outputs=[{"output_type": "stream", "name": "stdout", "text": f"RuntimeError: {STUB['evalue']}\n"}]),
      _cell("failed", "exercise 1.1", [BOX, STUB])], "prints a stub's error as text"),
    ([_cell(outputs=[{"output_type": "stream", "name": "stdout", "text": BOX["data"]["text/plain"]}]),
      _cell("failed", "exercise 1.1", [BOX, STUB])], "box as plain text;"),
    ([_cell(outputs=[{**BOX, "data": {"text/plain": BOX["data"]["text/plain"]}}]),
      _cell("failed", "exercise 1.1", [BOX, STUB])], "box as plain text only"),
    ([_cell(), _cell("failed", "NotImplementedError: exercise 1.1 ...", [STUB])], "without the exercise's box"),
    ([_cell("failed", "ValueError: bad", [{**STUB, "ename": "ValueError", "evalue": "bad"}]),
      _cell("failed", "exercise 1.1", [STUB])], "no unfinished exercise's"),
    ([_cell("failed", "Cell outputs differ"), _cell("failed", "exercise 1.1", [STUB])], "without naming"),
    ([_cell(outputs=[{"output_type": "stream", "name": "stderr", "text": "Traceback (most recent call last):"}]),
      _cell("failed", "exercise 1.1", [STUB])], "shows a traceback"),
    ([_cell(), _cell()], "names exercise(s) ['1.1']"),
    ([_cell("skipped"), _cell("failed", "exercise 1.1", [STUB])], "did not run"),
    ([_cell("failed", "exercise 1.1", [STUB])], "ran 1 of the 2"),
])
def test_problems_are_found(cells, wrong):
    found = problems(cells, 2, {"1.1"})
    assert (not found) if wrong is None else any(wrong in f for f in found), found
