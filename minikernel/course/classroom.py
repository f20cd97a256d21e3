"""GitHub Classroom's autograding workflow for a student edition (``release --github-classroom``).

Written to ``.github/workflows/classroom.yml`` of the edition, in the form GitHub
Classroom's own autograding uses: on every push, set the course up
(``tools/bootstrap.py``, with its ``.venv`` put first on ``PATH``), then one
``autograding-command-grader`` step per exercise running
``python -m minikernel grade <ID>`` (it passes when the exercise grades PASS) worth
the exercise's points from the weights file, and the reporter that sends the
points to the classroom. GitHub Classroom counts whole points only. Exercises whose
references the edition ships (``--keep``) are not tests; the grader uses those
references (as ``gradebook`` does), so the exercises after them are not BLOCKED.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import exercise as ex

WORKFLOW = Path(".github/workflows/classroom.yml")
COMMAND_GRADER = "classroom-resources/autograding-command-grader@v1"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
PYTHON = "3.12"
#: Sets the course up (its locked .venv) and puts the .venv first on PATH for the later steps.
SETUP = 'python3 tools/bootstrap.py && echo "$PWD/.venv/bin" >> "$GITHUB_PATH"'
TIMEOUT_MIN = 10  #: per exercise, the first run of a chapter's kernels compiles them


def step_id(exercise_id: str) -> str:
    """The workflow step id of an exercise: ``1.2`` -> ``exercise-1-2``."""
    return "exercise-" + exercise_id.replace(".", "-")


def whole_points(weights: dict[str, float]) -> dict[str, int]:
    """``weights`` as whole numbers, or a ValueError naming the exercises that are not."""
    bad = [f"{i} ({w:g})" for i, w in weights.items() if w != int(w) or w < 0]
    if bad:
        raise ValueError("GitHub Classroom awards whole, non-negative points per test; "
                         f"give these exercises whole points in the weights file: {', '.join(bad)}")
    return {i: int(w) for i, w in weights.items()}


def command(exercise_id: str, kept: list[str]) -> str:
    """The shell command that grades one exercise (with the shipped references on)."""
    references = f"env MINIKERNEL_SOLUTIONS={','.join(kept)} " if kept else ""
    return f"{references}python -m minikernel grade {exercise_id}"


def workflow(ids: list[str], weights: dict[str, float], kept: list[str] = ()) -> str:
    """The text of ``classroom.yml``: one graded step per exercise of ``ids`` not in ``kept``."""
    kept = list(kept)
    ids = [i for i in ids if i not in kept]
    if not ids:
        raise ValueError("every exercise's reference is kept: there is nothing left to grade")
    points = whole_points({i: weights[i] for i in ids})
    registry = ex.registry()
    q = json.dumps  # a JSON string is a YAML scalar
    lines = [
        "name: Autograding Tests",
        "'on':",
        "- push",
        "- repository_dispatch",
        "permissions:",
        "  checks: write",
        "  actions: read",
        "  contents: read",
        "jobs:",
        "  run-autograding-tests:",
        "    runs-on: ubuntu-latest",
        "    if: github.actor != 'github-classroom[bot]'",
        "    steps:",
        "    - name: Checkout code",
        "      uses: actions/checkout@v4",
        "    - name: Set up Python",
        "      uses: actions/setup-python@v5",
        "      with:",
        f"        python-version: {q(PYTHON)}",
        "    - name: Install the course",
        f"      run: {q(SETUP)}",
    ]
    for i in ids:
        lines += [
            f"    - name: {q(f'exercise {i}')}",
            f"      id: {step_id(i)}",
            f"      uses: {COMMAND_GRADER}",
            "      with:",
            f"        test-name: {q(f'exercise {i} ({registry[i].name})')}",
            "        setup-command: ''",
            f"        command: {q(command(i, kept))}",
            f"        timeout: {TIMEOUT_MIN}",
            f"        max-score: {points[i]}",
        ]
    lines += [
        "    - name: Autograding Reporter",
        f"      uses: {REPORTER}",
        "      env:",
        *(f"        {step_id(i).upper()}_RESULTS: {q('${{steps.' + step_id(i) + '.outputs.result}}')}" for i in ids),
        "      with:",
        f"        runners: {','.join(step_id(i) for i in ids)}",
    ]
    return "\n".join(lines) + "\n"


def write_workflow(edition: Path, ids: list[str], weights: dict[str, float], kept: list[str] = ()) -> Path:
    """Write ``classroom.yml`` into the edition at ``edition``; return its path."""
    text = workflow(ids, weights, kept)  # raises before anything is written
    path = edition / WORKFLOW
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
