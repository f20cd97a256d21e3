"""``minikernel.course.notebook_display``: what a cell shows for unfinished or wrong code.

The cells run in a real kernel (nbclient), in student mode, the way JupyterLab's
Run All runs them: a stub's error must become the exercise's box and end the cell
without an error, so the next cells run; any other error must stay an error.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from minikernel.course import exercise as ex, notebook_display as nd

ROOT = Path(__file__).resolve().parent.parent
SETUP = "from minikernel.course import notebook_display\nnotebook_display.install()\nfrom minikernel import strides as S"


def run(cells: list[str], monkeypatch) -> tuple[nbformat.NotebookNode, Exception | None]:
    """Run ``cells`` after the set-up cell in a fresh student-mode kernel; the notebook and
    the error that stopped it (None if every cell ended without one)."""
    monkeypatch.setenv("MINIKERNEL_SOLUTIONS", "")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in [SETUP, *cells]])
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    except CellExecutionError as err:
        return nb, err
    return nb, None


def text(cell) -> str:
    parts = []
    for o in cell.outputs:
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type == "error":
            parts.append("\n".join(o.traceback))
        else:
            parts.append(o.get("data", {}).get("text/plain", ""))
    return re.sub(r"\x1b\[[0-9;]*m", "", "".join(parts))  # no colour codes


@pytest.mark.parametrize("exercise_id", list(ex.registry()))
def test_the_box_names_a_file_and_function_that_exist(exercise_id):
    path, names = nd.exercise_location(exercise_id)
    source = (ROOT / path).read_text()
    for name in names.split(", "):
        assert re.search(rf"^\s*def {name}\(", source, re.MULTILINE), f"{path} has no def {name}"
    box = nd.todo_text(exercise_id)
    assert f"exercise {exercise_id}" in box.lower() and path in box and f'grade("{exercise_id}")' in box


@pytest.mark.parametrize("exercise_id", list(ex.registry()))
def test_the_box_links_to_the_stub_from_the_notebooks_folder(exercise_id, monkeypatch):
    """The link JupyterLab opens in its editor: the stub's file relative to chapters/
    (where the kernel runs), at the 0-based line of its ``raise NotImplementedError``."""
    href = nd.editor_href(exercise_id, str(ROOT / "chapters"))
    target, _, line = href.partition("#line=")
    path, _names = nd.exercise_location(exercise_id)
    assert (ROOT / "chapters" / target).resolve() == (ROOT / path).resolve(), href
    assert f"exercise {exercise_id} " in (ROOT / path).read_text().splitlines()[int(line)], href
    monkeypatch.chdir(ROOT / "chapters")
    assert f'href="{href}"' in nd.todo_html(exercise_id)


def test_show_todo_shows_the_box_and_refuses_what_names_no_exercise(capsys):
    nd.show_todo(NotImplementedError("exercise 1.2 (index_to_position) is not implemented yet"))
    assert capsys.readouterr().out.strip() == nd.todo_text("1.2")  # outside IPython: the plain-text form
    with pytest.raises(ValueError, match="names no exercise"):
        nd.show_todo(ValueError("bad"))


@pytest.mark.own_mode
def test_unfinished_exercise_shows_the_box_and_run_all_goes_on(monkeypatch):
    nb, err = run(["x = S.contiguous_strides((2, 3))\ny = 1", "print(x)", "z = x\nw = 2", "print(z, w)",
                   "print('still running')"], monkeypatch)
    assert err is None, err
    todo, waits, chained, chained2, last = nb.cells[1:]
    assert all(o.output_type != "error" for c in nb.cells for o in c.outputs)
    assert text(todo).startswith("Exercise 1.1 (contiguous_strides) is not written yet.")
    assert "minikernel/strides.py" in text(todo) and "Traceback" not in text(todo)
    assert any("text/html" in o.get("data", {}) for o in todo.outputs)
    assert text(waits).strip() == nd.waits_text("x", "1.1")
    assert "exercise 1.1" in text(chained) and "exercise 1.1" in text(chained2)
    assert text(last) == "still running\n"


@pytest.mark.own_mode
def test_other_errors_stay_errors(monkeypatch):
    nb, err = run(["undefined_name", "print('not reached')"], monkeypatch)
    assert err is not None and "NameError" in str(err)
    assert nb.cells[1].outputs[-1].output_type == "error"
    assert not nb.cells[2].outputs

    nb, err = run(["raise NotImplementedError('not an exercise')"], monkeypatch)
    assert err is not None and "not an exercise" in text(nb.cells[1])


@pytest.mark.own_mode
def test_an_error_in_the_learners_file_shows_their_frames_and_the_expected_answer(monkeypatch):
    # A wrong contiguous_strides, compiled as if written in minikernel/strides.py.
    wrong = ("src = 'def contiguous_strides(shape):\\n    return [][len(shape)]\\n'\n"
             "ns = {}\nexec(compile(src, S.__file__, 'exec'), ns)\n"
             "S.contiguous_strides.__code__ = ns['contiguous_strides'].__code__")
    nb, err = run([wrong, "import torch\ntorch.empty(0)\nS.contiguous_strides((2, 3))"], monkeypatch)
    assert err is not None and "IndexError" in str(err)
    shown = text(nb.cells[2])
    assert "Exercise 1.1 (contiguous_strides) raised instead of answering." in shown
    assert "called with: shape=(2, 3)" in shown and "expected:    (3, 1)" in shown
    assert "strides.py" in shown and "IndexError" in shown
    assert "site-packages" not in shown  # only the notebook's frames and the learner's


def test_assigned_names_are_the_cells_own():
    source = "a = 1\nb, (c, d) = f()\nfor i in x: pass\nimport os.path\nfrom m import n as k\n" \
             "def g(u):\n    v = 1\nclass C:\n    w = 2\nlst = [q for q in r]"
    assert nd._assigned_names(source) == {"a", "b", "c", "d", "i", "os", "k", "g", "C", "lst"}


def test_install_outside_ipython_does_nothing():
    assert nd.install() is False


@pytest.mark.own_mode
def test_nbval_in_student_mode_still_fails_those_cells_naming_the_exercise(tmp_path, monkeypatch):
    """nbval runs cells without storing them in the history: a check, where the
    handled cells must still fail, each naming its exercise; the others pass."""
    cells = [SETUP, "x = S.contiguous_strides((2, 3))", "print(x)", "print('independent')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="(3, 1)\n")]
    nb.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="independent\n")]
    for count, cell in enumerate(nb.cells, 1):
        cell.execution_count = count
    path = tmp_path / "check.ipynb"
    nbformat.write(nb, path)
    env = dict(os.environ, MINIKERNEL_SOLUTIONS="", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", str(path), "-q",
                           "-p", "no:cacheprovider", "-p", "no:randomly", "-rf"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout
    assert "2 failed, 2 passed" in out, out[-3000:]
    assert "NotImplementedError: exercise 1.1 (contiguous_strides) is not implemented yet" in out
    assert "NameError: name 'x' is not defined: this cell waits for exercise 1.1" in out
