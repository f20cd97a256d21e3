"""Pull after work: the learner runs and saves a chapter, writes an exercise, and then
brings a new commit of the course in with ``make update`` (``tools/update.py``).

A small course repository stands in for the real one (its chapter, a stub file,
the real ``.gitignore`` and update script). The learner's clone runs the chapter
the way the lab does (a copy in ``my-notebooks/`` by ``lab_notebooks.sync``,
executed by a kernel and saved there) and edits the stub; the course then changes
the chapter, the stub file elsewhere, and the very line the learner wrote.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from minikernel.course import lab_notebooks

ROOT = Path(__file__).resolve().parent.parent
STUB = '''def contiguous_strides(shape):
    raise NotImplementedError("exercise 1.1 (contiguous_strides) is not implemented yet")


def helper():
    return 1
'''


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=where, check=True,
                          capture_output=True, text=True).stdout


def write_chapter(course: Path, text: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(text)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    nbformat.write(nb, course / "chapters" / "01_strides.ipynb")
    (course / "chapters" / "01_strides.py").write_text(f"# %%\n{text}\n")


def test_pull_after_work_keeps_the_learners_code_and_brings_the_course_in(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    course = tmp_path / "course"
    for folder in ("chapters", "minikernel", "tools"):
        (course / folder).mkdir(parents=True)
    shutil.copy(ROOT / ".gitignore", course / ".gitignore")
    shutil.copy(ROOT / "tools" / "update.py", course / "tools" / "update.py")
    (course / "minikernel" / "strides.py").write_text(STUB)
    write_chapter(course, "print(6 * 7)")
    git(course, "init", "-q", "-b", "main")
    git(course, "add", "-A")
    git(course, "commit", "-q", "-m", "course")
    learner = tmp_path / "learner"
    git(tmp_path, "clone", "-q", str(course), str(learner))

    # the learner's session: the lab's copy, run and saved; an exercise written
    lab_notebooks.sync(learner)
    copy = learner / lab_notebooks.FOLDER / "01_strides.ipynb"
    nb = nbformat.read(copy, as_version=4)
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    nbformat.write(nb, copy)
    mine = "    return tuple(1 for _ in shape)  # mine"
    stub_file = learner / "minikernel" / "strides.py"
    stub_file.write_text(STUB.replace('    raise NotImplementedError("exercise 1.1 (contiguous_strides) '
                                      'is not implemented yet")', mine))
    assert git(learner, "status", "--porcelain") == " M minikernel/strides.py\n"  # only the learner's code

    # the course moves on: the chapter, the stub file elsewhere, and the learner's very line
    write_chapter(course, "print(6 * 7, 'updated')")
    (course / "minikernel" / "strides.py").write_text(
        STUB.replace("return 1", "return 2").replace("is not implemented yet", "is not written yet"))
    git(course, "commit", "-q", "-am", "course update")

    done = subprocess.run([sys.executable, "tools/update.py"], cwd=learner, capture_output=True, text=True,
                          timeout=120, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "chapters: 01_strides.ipynb" in out and "minikernel/strides.py" in out, out
    code = stub_file.read_text()
    assert mine in code and "return 2" in code, code  # the learner's line kept, the course's other change in
    assert "'updated'" in (learner / "chapters" / "01_strides.ipynb").read_text()
    assert git(learner, "status", "--porcelain") == ""  # no conflict, nothing left over
    assert "42" in copy.read_text()  # the learner's saved notebook untouched
    said = lab_notebooks.sync(learner)
    assert any("is kept" in line for line in said), said  # the next lab start says their copy stays


def test_an_edited_course_file_stops_the_update_and_says_which(tmp_path):
    course = tmp_path / "course"
    (course / "tools").mkdir(parents=True)
    shutil.copy(ROOT / "tools" / "update.py", course / "tools" / "update.py")
    (course / "README.md").write_text("course\n")
    git(course, "init", "-q", "-b", "main")
    git(course, "add", "-A")
    git(course, "commit", "-q", "-m", "course")
    learner = tmp_path / "learner"
    git(tmp_path, "clone", "-q", str(course), str(learner))
    (learner / "README.md").write_text("edited\n")
    done = subprocess.run([sys.executable, "tools/update.py"], cwd=learner, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and "README.md" in done.stdout and "git checkout -- <file>" in done.stdout
    assert (learner / "README.md").read_text() == "edited\n"
