"""No widget opens empty: every chapter's widget cell, run in student mode.

The cells are found in the chapters themselves (``chapters/NN_*.py``): a code cell
that imports one name from ``widgets`` and calls it with literal arguments. Each runs
with no exercise written (``MINIKERNEL_SOLUTIONS`` empty), and the still picture it
stores (``StaticView.static_html``, the widget's pictures as they are) must show a
drawing besides any "Finish exercise N.M" line: PyTorch's or the reference's side
while the learner's code is missing, never only the notice, never a traceback.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTICE = re.compile(r'<div class="mk-(todo|error)"[^>]*>.*?</div>', re.DOTALL)
CAPTION = re.compile(r"\(a still of .*?: run the notebook to use its controls\)")
pytestmark = [pytest.mark.own_mode, pytest.mark.timeout(600)]


def widget_cells() -> list[tuple[str, str]]:
    """(chapter, source) of each self-contained widget cell of the chapters."""
    found = []
    for chapter in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py")):
        for cell in chapter.read_text(encoding="utf-8").split("\n# %%")[1:]:
            source = cell.split("\n", 1)[1] if "\n" in cell else ""
            try:
                body = ast.parse(source).body
            except SyntaxError:
                continue
            if (len(body) == 2 and isinstance(body[0], ast.ImportFrom) and body[0].module == "widgets"
                    and len(body[0].names) == 1 and isinstance(body[1], ast.Expr)
                    and isinstance(call := body[1].value, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id == body[0].names[0].name):
                found.append((chapter.stem, source))
    return found


def test_the_chapters_widget_cells_are_found():
    names = {source.split("import ")[1].split()[0] for _chapter, source in widget_cells()}
    assert {"stride_explorer", "ring_stepper", "norm_explorer", "scaler_diagram"} <= names, names


def test_no_widget_opens_empty_in_student_mode():
    cells = widget_cells()
    script = ("import json, sys\nout = []\nfor source in json.loads(sys.argv[1]):\n"
              "    *setup, last = source.strip().splitlines()\n    ns = {}\n    exec('\\n'.join(setup), ns)\n"
              "    out.append(eval(last, ns).static_html())\nprint(json.dumps(out))")
    env = dict(os.environ, MINIKERNEL_SOLUTIONS="", PYTHONPATH=str(ROOT))
    env.pop("MINIKERNEL_OVERRIDE", None)
    proc = subprocess.run([sys.executable, "-c", script, json.dumps([s for _c, s in cells])], cwd=ROOT / "chapters",
                          env=env, capture_output=True, text=True, timeout=540, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pictures = json.loads(proc.stdout.strip().splitlines()[-1])
    for (chapter, source), page in zip(cells, pictures):
        assert "Traceback" not in page, (chapter, source)
        drawing = re.sub(r"<[^>]+>", " ", CAPTION.sub("", NOTICE.sub("", page)))
        assert len(re.sub(r"\s+|&nbsp;", "", drawing)) >= 20, f"{chapter}: `{source.strip()}` shows only {page[:600]}"
