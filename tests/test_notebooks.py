"""Notebook hygiene, and what a learner sees when nbval runs on unfinished code."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbval.plugin import metadata_tags

from minikernel.course.notebooks import failed_grade_cells

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
SOURCES = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))
NOTEBOOKS = sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
NBVAL_TAGS = set(metadata_tags)  # the tags nbval honours: nbval-ignore-output, nbval-skip, ...


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_every_source_has_its_notebook_and_back():
    assert SOURCES, "no chapter sources"
    assert [p.stem for p in SOURCES] == [p.stem for p in NOTEBOOKS]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_in_sync_with_its_source(source):
    from_py = jupytext.read(source)
    stored = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    pairs = list(zip(from_py.cells, stored.cells))
    assert len(from_py.cells) == len(stored.cells), "cell count differs: run `make notebooks`"
    for i, (a, b) in enumerate(pairs):
        assert (a.cell_type, a.source) == (b.cell_type, b.source), (
            f"cell {i} differs from {source.name}: run `make notebooks`")
        assert a.metadata.get("tags", []) == b.metadata.get("tags", []), (
            f"cell {i}'s tags differ from {source.name}: run `make notebooks`")


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_nbval_directives_are_tags_not_comments(source):
    # a learner reads the cells: nbval's directives go in the cell's tags
    # (`# %% tags=["nbval-ignore-output"]`), which nbval reads as it reads the comments
    for i, cell in enumerate(jupytext.read(source).cells):
        assert not re.search(r"#\s*(NBVAL|PYTEST_VALIDATE)_", cell.source), f"cell {i}: {cell.source[:80]!r}"
        unknown = [t for t in cell.metadata.get("tags", []) if t.startswith("nbval") and t not in NBVAL_TAGS]
        assert not unknown, f"cell {i}: nbval does not know the tags {unknown}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_execution_counts_run_one_to_n(notebook):
    counts = [c.execution_count for c in _code_cells(nbformat.read(notebook, as_version=4))]
    assert counts == list(range(1, len(counts) + 1)), "re-run `make notebooks` (top to bottom, fresh kernel)"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_have_no_errors(notebook):
    for cell in _code_cells(nbformat.read(notebook, as_version=4)):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors or "NBVAL_RAISES_EXCEPTION" in cell.source, f"{cell.source[:60]!r}: {errors[0].evalue}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_grade_tables_all_pass(notebook):
    # nbval compares the live table with the stored one: a stored FAIL makes the
    # passing run the "difference", which reads as if the grader failed
    assert not failed_grade_cells(nbformat.read(notebook, as_version=4)), "re-run `make notebooks`"


def test_a_failing_stored_grade_table_is_found():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("mk.grade('2.*')", outputs=[
        nbformat.v4.new_output("execute_result", data={"text/plain": "2.4  cpu_reduce  FAIL\n7/9 passed"})])])
    assert failed_grade_cells(nb) == ["code cell 1 (mk.grade('2.*')): 7/9 passed"]
    nb.cells[0].outputs[0].data["text/plain"] = "2.4  cpu_reduce  PASS\n9/9 passed"
    assert failed_grade_cells(nb) == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_trailing_semicolons(notebook):
    # nbval runs cells without store_history: `;` does not hide output there
    for cell in _code_cells(nbformat.read(notebook, as_version=4)):
        last = [line for line in cell.source.splitlines() if line.strip()][-1:]
        assert not (last and last[0].split("#")[0].rstrip().endswith(";")), cell.source[:60]


# what a viewer shows when it can draw nothing richer: a repr is no picture
BARE_REPR = re.compile(r"^<[\w.]+ (object|size)\b.*>$|^\w+\((children|layout|value)=", re.DOTALL)
SAFE_RICH = ("image/png", "image/jpeg", "text/html", "text/markdown")  # drawn without trusting the notebook


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_stored_output_is_a_bare_repr(notebook):
    """GitHub, nbviewer and JupyterLab before running (an untrusted notebook: no SVG, no
    widget without saved state) fall back to text/plain; it must not be a repr."""
    nb = nbformat.read(notebook, as_version=4)
    for n, cell in enumerate(_code_cells(nb), 1):
        for out in cell.outputs:
            data = out.get("data", {})
            plain = data.get("text/plain", "")
            if BARE_REPR.match(plain) and not any(k in data for k in SAFE_RICH):
                raise AssertionError(f"code cell {n}: stored output {plain[:80]!r} has no picture a viewer "
                                     f"draws (it has {sorted(data)})")
            if "application/vnd.jupyter.widget-view+json" in data:
                assert "text/html" in data and not BARE_REPR.match(plain), (
                    f"code cell {n}: a widget without a static picture ({plain[:60]!r})")
                model = data["application/vnd.jupyter.widget-view+json"]["model_id"]
                state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
                assert model in state.get("state", {}), f"code cell {n}: the widget's state is not saved"


@pytest.mark.parametrize("plain, bare", [
    ("<IPython.core.display.SVG object>", True), ("StrideExplorer(children=(ToggleButtons(", True),
    ("HBox(children=(Button(),))", True), ("<Figure size 700x300 with 1 Axes>", True),
    ("tensor([1, 2])", False), ("(12, 4, 1)", False), ("[the stride explorer: run the notebook to use it]", False)])
def test_bare_repr_pattern(plain, bare):
    assert bool(BARE_REPR.match(plain)) == bare


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_first_cell_says_what_to_run_when_the_course_is_not_installed(source, monkeypatch):
    first = _code_cells(jupytext.read(source))[0].source
    exec(compile(first, f"{source.name}, first cell", "exec"), {})  # installed: nothing happens
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "minikernel" else real(name, *a))
    with pytest.raises(ModuleNotFoundError) as err:
        exec(compile(first, f"{source.name}, first cell", "exec"), {})
    said = str(err.value)
    assert "cannot import minikernel." in said and "make lab" in said and "%pip install -e .." in said, said
