"""``gradebook --format gradescope``: Gradescope's autograder ``results.json``.

``SCHEMA`` is written from Gradescope's published autograder specification
("Output format" of its autograder docs): the top-level and per-test keys it
documents, with their types; any other key is refused. The rows graded here are
made up (a PASS, a FAIL with a message, a TODO, a missing verdict, a submission
that could not be read), so these tests grade nothing.
"""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from minikernel.course import gradebook
from minikernel.course.gradebook import Result, write_outputs
from minikernel.course.gradescope import VISIBILITIES, results_json

NUMBER = {"type": "number"}
VISIBILITY = {"enum": list(VISIBILITIES)}
TEST = {
    "type": "object",
    "required": ["name", "score", "max_score", "output", "visibility"],  # what the course always writes
    "additionalProperties": False,
    "properties": {
        "score": NUMBER, "max_score": NUMBER, "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"}, "name_format": {"type": "string"}, "number": {"type": "string"},
        "output": {"type": "string"}, "output_format": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}}, "visibility": VISIBILITY,
        "extra_data": {"type": "object"},
    },
}
SCHEMA = {
    "type": "object",
    "required": ["score", "tests"],
    "additionalProperties": False,
    "properties": {
        "score": NUMBER, "execution_time": NUMBER, "output": {"type": "string"},
        "output_format": {"type": "string"}, "test_output_format": {"type": "string"},
        "test_name_format": {"type": "string"}, "visibility": VISIBILITY, "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"}, "tests": {"type": "array", "items": TEST},
        "leaderboard": {"type": "array", "items": {"type": "object", "required": ["name", "value"]}},
    },
}

IDS = ["1.1", "1.2", "1.3", "2.1"]
WEIGHTS = {"1.1": 1.0, "1.2": 2.0, "1.3": 0.5, "2.1": 3.0}


def _row() -> Result:
    return Result("ann", {
        "1.1": {"id": "1.1", "name": "contiguous_strides", "status": "PASS", "detail": ""},
        "1.2": {"id": "1.2", "name": "index_to_position", "status": "FAIL",
                "detail": "index_to_position((1, 2), (3, 1)) expected 5, got 4"},
        "1.3": {"id": "1.3", "name": "position_to_index", "status": "TODO", "detail": "stub untouched"},
    }, notes=["not in the submission (graded as untouched stubs): minikernel/kernels/cpu.py"])


def test_results_validate_against_the_published_format():
    report = results_json(_row(), IDS, WEIGHTS)
    jsonschema.validate(report, SCHEMA)
    assert [t["number"] for t in report["tests"]] == IDS


def test_points_follow_the_weights_and_only_pass_earns_them():
    tests = {t["number"]: t for t in results_json(_row(), IDS, WEIGHTS)["tests"]}
    assert {i: (t["score"], t["max_score"], t["status"]) for i, t in tests.items()} == {
        "1.1": (1.0, 1.0, "passed"), "1.2": (0.0, 2.0, "failed"),
        "1.3": (0.0, 0.5, "failed"), "2.1": (0.0, 3.0, "failed")}
    assert results_json(_row(), IDS, WEIGHTS)["score"] == 1.0


def test_output_carries_the_graders_message_and_the_notes():
    report = results_json(_row(), IDS, WEIGHTS)
    tests = {t["number"]: t for t in report["tests"]}
    assert tests["1.1"]["output"] == "PASS"
    assert tests["1.2"]["output"].splitlines() == ["FAIL", "index_to_position((1, 2), (3, 1)) expected 5, got 4"]
    assert tests["2.1"]["output"] == "not graded"
    assert tests["1.2"]["name"] == "exercise 1.2 (index_to_position)"
    assert "minikernel/kernels/cpu.py" in report["output"]


def test_an_unreadable_submission_scores_zero_and_says_why():
    report = results_json(Result("bob", error="not graded: corrupt.zip is not a zip file"), IDS, WEIGHTS)
    jsonschema.validate(report, SCHEMA)
    assert report["score"] == 0 and "not a zip file" in report["output"]
    assert all(t["score"] == 0 and "not a zip file" in t["output"] for t in report["tests"])


def test_visibility_is_checked():
    report = results_json(_row(), IDS, WEIGHTS, visibility="after_published")
    assert {t["visibility"] for t in report["tests"]} == {"after_published"}
    with pytest.raises(ValueError, match="after_due_date"):
        results_json(_row(), IDS, WEIGHTS, visibility="students")


def test_the_schema_refuses_what_gradescope_does_not_document():
    report = results_json(_row(), IDS, WEIGHTS)
    report["tests"][0]["points"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tests": []}, SCHEMA)


def test_class_mode_writes_one_file_per_student_and_single_mode_one_results_json(tmp_path):
    rows = [_row(), Result("bob / 2", error="not graded: empty")]
    write_outputs(tmp_path / "class", rows, IDS, WEIGHTS, "gradescope")
    written = sorted(p.relative_to(tmp_path / "class").as_posix() for p in (tmp_path / "class").rglob("*.json"))
    assert written == ["gradescope/ann/results.json", "gradescope/bob_2/results.json"]
    write_outputs(tmp_path / "one", rows[:1], IDS, WEIGHTS, "gradescope", one=True)
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["results.json"]
    jsonschema.validate(json.loads((tmp_path / "one" / "results.json").read_text()), SCHEMA)


def test_single_mode_refuses_a_missing_submission(tmp_path, capsys):
    code = gradebook.main([str(tmp_path / "nowhere"), "--single", "--format", "gradescope",
                           "--out", str(tmp_path / "out"), "--exercises", "1.1"])
    assert code == 2 and "does not exist" in capsys.readouterr().err
    assert not Path(tmp_path / "out" / "results.json").exists()


def test_an_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="gradebook, gradescope"):
        gradebook.run(tmp_path, tmp_path / "out", gradebook.Settings(["1.1"]), output_format="moodle")
