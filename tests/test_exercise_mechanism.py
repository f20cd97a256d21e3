"""The exercise mechanism itself: registry, references, selection, IDs everywhere."""
from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import minikernel
from minikernel.course import exercise as ex

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ex.registry()


def _marked_ids() -> set[str]:
    ids = set()
    for path in (ROOT / "tests").glob("ch*/test_*.py"):
        ids |= set(re.findall(r"mark\.exercise\(\s*\"([0-9.]+)\"\s*\)", path.read_text()))
    return ids


def _import_in_subprocess(selection: str, code: str = "import minikernel") -> subprocess.CompletedProcess:
    env = dict(os.environ, MINIKERNEL_SOLUTIONS=selection)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)


def test_chapter_01_exercises_are_registered():
    assert {"1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7"} <= set(REGISTRY)


@pytest.mark.parametrize("exercise_id", list(REGISTRY))
def test_every_exercise_has_a_reference_with_the_same_signature(exercise_id):
    for name, stub in REGISTRY[exercise_id].stubs.items():
        reference = ex.reference_of(exercise_id, stub)
        assert reference is not stub
        assert inspect.signature(reference) == inspect.signature(stub), name


@pytest.mark.parametrize("exercise_id", list(REGISTRY))
def test_every_stub_raises_naming_its_exercise(exercise_id):
    for name, stub in REGISTRY[exercise_id].stubs.items():
        args = [None] * sum(p.default is p.empty for p in inspect.signature(stub).parameters.values())
        with pytest.raises(NotImplementedError) as info:
            stub(*args)
        assert ex.stub_exercise_id(info.value) == exercise_id
        assert name in str(info.value)


def test_every_exercise_has_a_test_and_every_marker_an_exercise():
    marked = _marked_ids()
    assert set(REGISTRY) - marked == set(), "exercises without a test marked with their ID"
    assert marked - set(REGISTRY) == set(), "test markers naming no exercise"


@pytest.mark.parametrize("exercise_id", list(REGISTRY))
def test_every_exercise_has_a_notebook_heading(exercise_id):
    chapter = int(exercise_id.split(".")[0])
    sources = list((ROOT / "chapters").glob(f"{chapter:02d}_*.py"))
    assert sources, f"no chapters/{chapter:02d}_*.py"
    first_name = next(iter(REGISTRY[exercise_id].stubs))
    heading = re.compile(rf"^# #+ Exercise {re.escape(exercise_id)} — .*{first_name}", re.M)
    assert heading.search(sources[0].read_text()), f"no heading 'Exercise {exercise_id} — {first_name}'"


def test_decorator_returns_the_plain_function_for_the_current_mode():
    for exercise_id, entry in REGISTRY.items():
        for name, stub in entry.stubs.items():
            active = getattr(sys.modules[stub.__module__], name)
            if ex.uses_reference(exercise_id):
                assert active is ex.reference_of(exercise_id, stub)
            else:
                assert active is stub
            assert inspect.isfunction(active)  # not a wrapper: numba can compile it


@pytest.mark.parametrize("spec, expected", [
    (None, []), ("", []), ("  ", []), ("all", ["all"]), ("1.2", ["1.2"]),
    ("1.2, 1.5", ["1.2", "1.5"]), ("1.*,2.3", ["1.*", "2.3"]),
])
def test_parse_selection(spec, expected):
    assert ex.parse_selection(spec) == expected


@pytest.mark.parametrize("spec", ["1", "x", "1.2.3", "*", "1.0", "yes"])
def test_parse_selection_refuses_what_is_not_an_id(spec):
    with pytest.raises(ValueError, match="not an exercise ID"):
        ex.parse_selection(spec)


@pytest.mark.parametrize("spec", ["1.99", "42.*"])
@pytest.mark.own_mode
def test_unknown_exercise_in_env_is_a_clear_error(spec):
    proc = _import_in_subprocess(spec)
    assert proc.returncode != 0
    assert f"{spec!r} matches no exercise" in proc.stderr and "Known exercises: 1.1" in proc.stderr


@pytest.mark.own_mode
def test_one_reference_switched_on_alone():
    code = ("import minikernel.strides as s, solutions.strides as r, minikernel.course.exercise as e;"
            "print(s.index_to_position is r.index_to_position, s.to_index is r.to_index,"
            " e.registry()['1.2'].uses_reference)")
    proc = _import_in_subprocess("1.2", code)
    assert proc.stdout.split() == ["True", "False", "True"], proc.stderr


@pytest.mark.own_mode
def test_chapter_glob_switches_on_the_chapter():
    code = "import minikernel.course.exercise as e; print(sorted(i for i, x in e.registry().items() if x.uses_reference))"
    proc = _import_in_subprocess("1.*", code)
    assert proc.stdout.strip() == str(sorted(i for i in REGISTRY if i.startswith("1."))), proc.stderr


def test_select_patterns():
    assert ex.select(["1.2"]) == ["1.2"]
    assert ex.select(["1.*"]) == [i for i in REGISTRY if i.startswith("1.")]
    assert ex.select([]) == list(REGISTRY)
    with pytest.raises(ValueError, match="no exercise matches '7.9'"):
        ex.select(["7.9"])


def test_minikernel_imports_in_every_mode():
    assert minikernel.tensor is not None  # importing never needs an exercise
