"""Teaching a class: ``release`` writes a student edition, ``gradebook`` grades submissions.

The fixture submissions are made from a real student edition of this course: left
untouched, solved (the references' bodies transplanted into the stubs), partly
solved, stuck in a compiled endless loop, with an edited test, reaching for the
references, and a corrupt archive. Every expected row follows from what each
submission did, not from running the gradebook first.
"""
from __future__ import annotations

import ast
import csv
import functools
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from minikernel.course import edition, exercise as ex
from minikernel.course.gradebook import Settings, run
from minikernel.course.submissions import learner_files

ROOT = Path(__file__).resolve().parent.parent
GRADED = ["1.1", "1.2", "1.3", "2.1"]
TIMEOUT_S = 15

pytestmark = [pytest.mark.own_mode, pytest.mark.xdist_group("gradebook")]  # grades in its own subprocesses; `book` built once


def transplant(stub_source: str, reference_source: str, names: set[str]) -> str:
    """``stub_source`` with the bodies of ``names`` replaced by the reference's bodies.

    The reference module's imports go at the end of the stub module: the bodies look
    their globals up when called, and by then the module is complete.
    """
    stub_tree, ref_tree = ast.parse(stub_source), ast.parse(reference_source)
    refs = {f.name: f for f in ref_tree.body if isinstance(f, ast.FunctionDef)}
    ref_lines, lines = reference_source.splitlines(), stub_source.splitlines()
    stubs = sorted((f for f in stub_tree.body if isinstance(f, ast.FunctionDef) and f.name in names),
                   key=lambda f: f.lineno, reverse=True)
    for f in stubs:
        body = refs[f.name].body
        start = f.body[1].lineno if isinstance(f.body[0], ast.Expr) and len(f.body) > 1 else f.body[0].lineno
        lines[start - 1:f.end_lineno] = ref_lines[body[0].lineno - 1:body[-1].end_lineno]
    imports = [ast.get_source_segment(reference_source, s) for s in ref_tree.body
               if isinstance(s, (ast.Import, ast.ImportFrom)) and getattr(s, "module", "") != "__future__"]
    return "\n".join(lines + ["", *imports, ""])


def _stub(exercise_id: str) -> str:
    name = ex.registry()[exercise_id].name.split(", ")[0]
    return f'raise NotImplementedError("exercise {exercise_id} ({name}) is not implemented yet")'


def _solve(course: Path, ids: list[str]) -> None:
    registry = ex.registry()
    for module in sorted({registry[i].module for i in ids}):
        names = {n for i in ids if registry[i].module == module for n in registry[i].stubs}
        rel = Path(*module.split(".")).with_suffix(".py")
        stub = course / "minikernel" / rel
        stub.write_text(transplant(stub.read_text(), (ROOT / "solutions" / rel).read_text(), names))


def _replace_body(course: Path, exercise_id: str, body: str) -> None:
    rel = Path(*ex.registry()[exercise_id].module.split(".")).with_suffix(".py")
    path = course / "minikernel" / rel
    text = path.read_text()
    assert _stub(exercise_id) in text
    path.write_text(text.replace(_stub(exercise_id), body, 1))


@pytest.fixture
def book(tmp_path_factory):
    """Release an edition, make the fixture submissions from it, grade them all once."""
    # Once per process, not per module scope: pytest-xdist tears a module's fixtures down
    # whenever its worker runs out of queued tests, and this one takes half a minute.
    return _book(tmp_path_factory.getbasetemp())


@functools.cache
def _book(base: Path) -> dict:
    tmp = base / "class"
    tmp.mkdir()
    released = tmp / "edition"
    edition.release(released)
    subs = tmp / "submissions"
    subs.mkdir()

    shutil.copytree(released, subs / "untouched")

    solved = tmp / "solved"
    shutil.copytree(released, solved)
    _solve(solved, GRADED)
    with zipfile.ZipFile(subs / "solved.zip", "w") as z:  # archived under a top folder, as students do
        for p in solved.rglob("*"):
            z.write(p, Path("solved") / p.relative_to(solved))

    partly = subs / "partly"
    shutil.copytree(released, partly)
    _solve(partly, ["1.1", "1.2"])
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=s", "-c", "user.email=s@x", "commit", "-qm", "hw"]):
        subprocess.run(["git", *cmd], cwd=partly, check=True, capture_output=True)

    looping = subs / "looping"
    shutil.copytree(released, looping)
    _solve(looping, ["1.1", "1.2", "1.3"])
    _replace_body(looping, "2.1", "while True:\n        pass")  # inside a numba-compiled helper

    edits_tests = subs / "edits_tests"
    shutil.copytree(released, edits_tests)
    for test in (edits_tests / "tests").rglob("test_*.py"):
        test.write_text("def test_nothing():\n    assert True\n")

    cheats = subs / "cheats"
    shutil.copytree(released, cheats)
    _replace_body(cheats, "1.1", "from solutions.strides import contiguous_strides as ref\n    return ref(shape)")
    _replace_body(cheats, "1.2", "import pathlib\n    namespace = {}\n    exec(pathlib.Path(__file__).parents[1]"
                  ".joinpath('solutions', 'strides.py').read_text(), namespace)\n"
                  "    return namespace['index_to_position'](index, strides, offset)")

    (subs / "corrupt.zip").write_bytes(b"PK\x03\x04 this is not a zip file")

    out = tmp / "out"
    settings = Settings(GRADED, timeout_s=TIMEOUT_S, submission_timeout_s=120)
    results = run(subs, out, settings, jobs=2)
    with (out / "gradebook.csv").open() as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    return {"results": {r.student: r for r in results}, "rows": rows, "out": out, "edition": released}


def _statuses(book, student):
    return {i: v["status"] for i, v in book["results"][student].verdicts.items()}


def test_untouched_edition_grades_todo_and_zero(book):
    assert _statuses(book, "untouched") == {i: "TODO" for i in GRADED}
    assert book["rows"]["untouched"]["total"] == "0"


def test_solved_archive_grades_pass_and_full_marks(book):
    assert _statuses(book, "solved") == {i: "PASS" for i in GRADED}
    row = book["rows"]["solved"]
    assert row["total"] == row["max"] == str(len(GRADED))


def test_partly_solved_git_repository(book):
    assert _statuses(book, "partly") == {"1.1": "PASS", "1.2": "PASS", "1.3": "TODO", "2.1": "TODO"}
    assert book["rows"]["partly"]["total"] == "2"


def test_compiled_endless_loop_fails_without_hanging_the_gradebook(book):
    result = book["results"]["looping"]
    assert result.verdicts.get("2.1", {}).get("status") != "PASS"
    assert book["rows"]["looping"]["1.1"] == "1" or result.error  # graded, or said why not
    assert int(float(book["rows"]["looping"]["total"])) <= 3


def test_editing_a_test_gains_nothing(book):
    assert _statuses(book, "edits_tests") == {i: "TODO" for i in GRADED}
    assert book["rows"]["edits_tests"]["total"] == "0"


def test_reaching_for_the_references_gains_nothing(book):
    statuses = _statuses(book, "cheats")
    assert statuses["1.1"] != "PASS" and statuses["1.2"] != "PASS", statuses
    assert book["rows"]["cheats"]["total"] == "0"


def test_corrupt_archive_gets_a_row_saying_why(book):
    row = book["rows"]["corrupt"]
    assert row["total"] == "0" and "cannot be read" in row["note"]


def test_html_and_feedback_files(book):
    page = (book["out"] / "gradebook.html").read_text()
    assert all(s in page for s in ("untouched", "solved", "sortBy(", "show(this)"))
    feedback = (book["out"] / "feedback" / "partly.txt").read_text()
    assert "1.3" in feedback and "TODO" in feedback and "total: 2/4" in feedback


#: References of exercises that rebuild code the library itself runs, which the edition
#: ships on purpose (docs/teaching.md): chapter 09's 9.1-9.3 rebuild
#: the core of minikernel/dispatch, the dispatcher every Tensor operator goes through.
REBUILDS_LIBRARY_CODE = {"solutions/dispatch/rebuild.py"}


def test_edition_holds_no_reference_code(book):
    released = book["edition"]
    assert not (released / "tests" / "wrong").exists()
    bodies = []
    for path in sorted((ROOT / "solutions").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() in REBUILDS_LIBRARY_CODE:
            continue
        tree = ast.parse(path.read_text())
        bodies += [ast.get_source_segment(path.read_text(), f.body[-1]) for f in tree.body
                   if isinstance(f, ast.FunctionDef) and len(ast.unparse(f.body[-1])) > 40]
    text = "\n".join(p.read_text(errors="replace") for p in released.rglob("*.py"))
    leaked = [b for b in bodies if b in text]
    assert not leaked, f"reference code found in the edition: {leaked[:3]}"
    assert learner_files(released) == learner_files(ROOT)


def test_edition_refuses_references_it_does_not_ship(book):
    env = {**os.environ, "PYTHONPATH": str(book["edition"]), "MINIKERNEL_SOLUTIONS": "all"}
    proc = subprocess.run([sys.executable, "-c", "import minikernel"], cwd=book["edition"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "not part of this student edition" in proc.stderr


def test_release_keep_ships_only_the_chosen_references(tmp_path):
    ids = edition.release(tmp_path / "e", keep="1.2")
    assert ids == ["1.2"]
    shipped = (tmp_path / "e" / "solutions" / "strides.py").read_text()
    assert "def index_to_position" in shipped and "def contiguous_strides" not in shipped
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "e"), "MINIKERNEL_SOLUTIONS": "1.2"}
    code = ("import minikernel.strides as s, minikernel.course.exercise as e;"
            "print(e.registry()['1.2'].uses_reference, s.index_to_position((1, 2), (3, 1), 4))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "e", env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.split() == ["True", str(4 + 1 * 3 + 2 * 1)], proc.stderr


def test_release_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    with pytest.raises(FileExistsError, match="--force"):
        edition.release(tmp_path / "x")


def test_a_submission_that_crashes_the_gradebook_gets_a_row(tmp_path, book, monkeypatch):
    from minikernel.course import gradebook

    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(book["edition"], subs / "ann")

    def crash(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(gradebook, "build_tree", crash)
    results = run(subs, tmp_path / "out", Settings(["1.1"], timeout_s=TIMEOUT_S, submission_timeout_s=120))
    assert results[0].crashed and "RuntimeError: disk on fire" in results[0].error
    with (tmp_path / "out" / "gradebook.csv").open() as f:
        row = next(csv.DictReader(f))
    assert row["student"] == "ann" and "disk on fire" in row["note"]


def test_single_submission_for_gradescope(tmp_path, book):
    """``run_autograder``'s call: one submission (a git repository here) into results.json."""
    from minikernel.course import gradebook

    weights = tmp_path / "weights.json"
    weights.write_text('{"1.3": 4}')
    partly = book["out"].parent / "submissions" / "partly"
    code = gradebook.main([str(partly), "--single", "--format", "gradescope", "--out", str(tmp_path / "results"),
                           "--exercises", "1.2,1.3", "--weights", str(weights), "--timeout", str(TIMEOUT_S)])
    assert code == 0
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["results.json"]
    report = json.loads((tmp_path / "results" / "results.json").read_text())
    assert report["score"] == 1
    assert [(t["number"], t["score"], t["max_score"], t["status"]) for t in report["tests"]] == [
        ("1.2", 1, 1, "passed"), ("1.3", 0, 4, "failed")]
    assert report["tests"][1]["output"].startswith("TODO")
