"""What a new learner sees: every chapter run top to bottom with no exercise written.

Each chapter is executed with nbclient in student mode (``MINIKERNEL_SOLUTIONS``
unset), the way JupyterLab's Run All executes it: it must reach its last cell with
no error output and no traceback text anywhere, and each unfinished exercise must
show its box (``minikernel.course.notebook_display``).

A chapter takes minutes; run them side by side with ``-n 4 --dist load``.
"""
from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest
from nbclient import NotebookClient

from minikernel.course import exercise as ex

pytestmark = pytest.mark.timeout(900)  # a chapter takes minutes on a busy machine
ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
SOURCES = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))
CELL_TIMEOUT_S = 600
# what IPython prints for a traceback, in any of its forms
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^-+> \d|Cell In\[\d+\]", re.MULTILINE)


def _texts(output) -> list[str]:
    if output.output_type == "stream":
        return [output.text]
    if output.output_type == "error":
        return ["\n".join(output.traceback)]
    return [v for k, v in output.get("data", {}).items() if k.startswith("text/") and isinstance(v, str)]


def _chapter_ids(source: Path) -> set[str]:
    number = int(source.name[:2])
    return {i for i in ex.registry() if int(i.split(".")[0]) == number}


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_run_all_in_student_mode_reaches_the_last_cell(source, monkeypatch):
    monkeypatch.setenv("MINIKERNEL_SOLUTIONS", "")  # the kernel inherits this environment
    notebook = jupytext.read(source)
    client = NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(CHAPTERS)}})
    client.execute()  # raises CellExecutionError at the first cell that ends in an error
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code[-1].execution_count is not None, "the last cell did not run"
    boxes = set()
    for number, cell in enumerate(code, 1):
        for output in cell.outputs:
            assert output.output_type != "error", f"code cell {number}: {output.ename}: {output.evalue}"
            for text in _texts(output):
                assert not TRACEBACK.search(text), f"code cell {number} shows a traceback:\n{text[:2000]}"
                boxes |= set(re.findall(r"Exercise (\d+\.\d+) \(.*\) is not written yet", text))
    missing = _chapter_ids(source) - boxes
    assert not missing, f"no cell shows the box of exercise(s) {sorted(missing, key=ex.id_key)}"
