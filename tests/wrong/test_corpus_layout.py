"""The corpus is complete and well formed: at least three wrong bodies per exercise.

Cheap (no grading); runs in every test layer. The grading itself is test_corpus.py.
"""
from __future__ import annotations

import re
from collections import Counter

import pytest

from minikernel.course import exercise as ex

from .cases import all_cases

CASES = all_cases()
REGISTRY = ex.registry()
MIN_CASES = 3


def test_every_exercise_has_at_least_three_wrong_solutions():
    counts = Counter(c.exercise for c in CASES)
    short = {i: counts[i] for i in REGISTRY if counts[i] < MIN_CASES}
    assert not short, f"exercises with fewer than {MIN_CASES} wrong solutions in tests/wrong/: {short}"


#: Exercises that came with at least NEW_MIN_CASES wrong solutions each (the newer ones).
NEW_MIN_CASES = 5
NEWER = ("7.5", "7.6", "9.*", "10.*")


def test_newer_exercises_have_at_least_five_wrong_solutions():
    counts = Counter(c.exercise for c in CASES)
    newer = ex.select(list(NEWER))
    short = {i: counts[i] for i in newer if counts[i] < NEW_MIN_CASES}
    assert newer and not short, f"exercises with fewer than {NEW_MIN_CASES} wrong solutions: {short}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_is_well_formed(case):
    assert case.exercise in REGISTRY, f"{case.path}: EXERCISE = {case.exercise!r} names no exercise"
    chapter = int(case.exercise.split(".")[0])
    assert case.path.parent.name == f"ch{chapter:02d}", f"{case.path} belongs in tests/wrong/ch{chapter:02d}/"
    prefix = case.exercise.replace(".", "_") + "_"
    assert case.path.stem.startswith(prefix) and re.fullmatch(r"[0-9_a-z]+", case.path.stem), (
        f"{case.path.name}: name it {prefix}<the_mistake>.py")
    assert case.mistake, f"{case.path}: start with a docstring saying the mistake in one line"
    stubs = REGISTRY[case.exercise].stubs
    assert set(case.functions) & set(stubs), f"{case.path} defines none of {sorted(stubs)}"
