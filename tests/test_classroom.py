"""``release --github-classroom``: GitHub Classroom's autograding workflow in the edition.

The shape checked is the one GitHub Classroom's autograding writes itself: a job of
``autograding-command-grader`` steps (``test-name``, ``command``, ``timeout``,
``max-score``), then ``autograding-grading-reporter`` with a ``<STEP-ID>_RESULTS``
variable per step and the step ids as ``runners``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from minikernel.course import classroom, edition, exercise as ex

pytestmark = pytest.mark.xdist_group("gradebook")  # releases an edition, as test_gradebook does


def _graders(text: str) -> list[dict]:
    doc = yaml.safe_load(text)
    assert set(doc["on"] if "on" in doc else doc[True]) >= {"push"}
    steps = doc["jobs"]["run-autograding-tests"]["steps"]
    graders = [s for s in steps if s.get("uses") == classroom.COMMAND_GRADER]
    reporter = steps[-1]
    assert reporter["uses"] == classroom.REPORTER
    assert reporter["with"]["runners"].split(",") == [g["id"] for g in graders]
    assert reporter["env"] == {f"{g['id'].upper()}_RESULTS": f"${{{{steps.{g['id']}.outputs.result}}}}"
                               for g in graders}
    return graders


def test_one_step_per_exercise_with_its_points():
    ids = ["1.1", "1.2", "2.1"]
    graders = _graders(classroom.workflow(ids, {"1.1": 1.0, "1.2": 3.0, "2.1": 2.0}))
    assert [(g["with"]["command"], g["with"]["max-score"]) for g in graders] == [
        ("python -m minikernel grade 1.1", 1), ("python -m minikernel grade 1.2", 3),
        ("python -m minikernel grade 2.1", 2)]
    assert graders[1]["with"]["test-name"] == f"exercise 1.2 ({ex.registry()['1.2'].name})"
    assert all(g["with"]["timeout"] == classroom.TIMEOUT_MIN for g in graders)


def test_kept_references_are_not_tests_and_are_switched_on():
    graders = _graders(classroom.workflow(["1.1", "1.2"], {"1.1": 1.0, "1.2": 1.0}, kept=["1.1"]))
    assert [g["with"]["command"] for g in graders] == ["env MINIKERNEL_SOLUTIONS=1.1 python -m minikernel grade 1.2"]
    with pytest.raises(ValueError, match="nothing left to grade"):
        classroom.workflow(["1.1"], {"1.1": 1.0}, kept=["1.1"])


def test_fractional_points_are_refused_by_name():
    with pytest.raises(ValueError, match=r"whole points.*1\.2 \(2\.5\)"):
        classroom.workflow(["1.1", "1.2"], {"1.1": 1.0, "1.2": 2.5})


def test_release_writes_a_workflow_listing_every_exercise(tmp_path, capsys):
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"2.*": 2, "1.2": 5}))
    out = tmp_path / "edition"
    assert edition.main([str(out), "--github-classroom", "--weights", str(weights)]) == 0
    assert "GitHub Classroom autograding" in capsys.readouterr().out
    graders = _graders((out / classroom.WORKFLOW).read_text())
    expected = {i: 5 if i == "1.2" else 2 if i.startswith("2.") else 1 for i in ex.registry()}
    assert {g["with"]["command"].rsplit(" ", 1)[-1]: g["with"]["max-score"] for g in graders} == expected
    assert (out / "tools" / "bootstrap.py").is_file()  # what the workflow's set-up step runs
    assert not (out / "solutions" / "strides.py").exists()


def test_bad_weights_stop_the_release_before_anything_is_written(tmp_path, capsys):
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"1.*": 0.5}))
    out = tmp_path / "edition"
    assert edition.main([str(out), "--github-classroom", "--weights", str(weights)]) == 2
    assert "whole points" in capsys.readouterr().err
    assert not out.exists()


def test_weights_without_github_classroom_are_refused(tmp_path, capsys):
    assert edition.main([str(tmp_path / "e"), "--weights", str(tmp_path / "w.json")]) == 2
    assert "--github-classroom" in capsys.readouterr().err
    assert not Path(tmp_path / "e").exists()
