"""``minikernel.course.lab_notebooks``: the learner's copies of the chapters."""
from __future__ import annotations

import json

import nbformat

from minikernel.course import lab_notebooks as ln


def chapter(root, name: str, text: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(text)])
    nb.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    (root / "chapters").mkdir(exist_ok=True)
    nbformat.write(nb, root / "chapters" / name)


def cell(path) -> str:
    return "".join(json.loads(path.read_text())["cells"][0]["source"])


def test_copies_are_made_once_unpaired_and_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    chapter(tmp_path, "01_a.ipynb", "print(1)")
    said = ln.sync(tmp_path)
    copy = tmp_path / ln.FOLDER / "01_a.ipynb"
    assert cell(copy) == "print(1)" and "jupytext" not in json.loads(copy.read_text())["metadata"]
    assert said and "my-notebooks/" in said[0]
    assert nbformat.sign.NotebookNotary().check_signature(nbformat.read(copy, as_version=4))
    assert ln.sync(tmp_path) == []  # nothing changed: nothing said


def test_a_course_update_refreshes_an_unsaved_copy_and_keeps_a_saved_one(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    chapter(tmp_path, "01_a.ipynb", "print(1)")
    chapter(tmp_path, "02_b.ipynb", "print(2)")
    ln.sync(tmp_path)
    saved = tmp_path / ln.FOLDER / "02_b.ipynb"
    saved.write_text(saved.read_text().replace("print(2)", "print('mine')"))
    chapter(tmp_path, "01_a.ipynb", "print(10)")
    chapter(tmp_path, "02_b.ipynb", "print(20)")
    said = ln.sync(tmp_path)
    assert cell(tmp_path / ln.FOLDER / "01_a.ipynb") == "print(10)"
    assert cell(saved) == "print('mine')"
    assert any("01_a.ipynb" in line and "updated" in line for line in said), said
    assert any("02_b.ipynb" in line and "is kept" in line for line in said), said
    assert ln.sync(tmp_path) == []  # said once
