"""Shared pytest set-up: hypothesis profiles and the student-mode rule.

Student mode (``MINIKERNEL_SOLUTIONS`` unset): every test marked
``@pytest.mark.exercise("N.M")`` must stop at that exercise's stub, or at the stub of
an earlier exercise it builds on (a test that needs several exercises carries the
marker of the last one, so that the earlier ones grade on their own). Such a test is
reported as xfail ("TODO"); if it passes, or fails any other way, it is a real
failure: a test that passes without the learner's code checks nothing, and a
different error means something outside the exercises broke.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

from minikernel.course.exercise import id_key, stub_exercise_id
from minikernel.kernels import launch

# No "explain" phase: it traces coverage and makes every failure (a stub's too) slow.
_COMMON = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow],
               phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink])
settings.register_profile("default", max_examples=100, **_COMMON)
# Grading is reproducible: the same cases every run, so a verdict does not flip between
# runs and numba compiles each kernel specialization once (later runs read its cache).
settings.register_profile("grade", max_examples=60, report_multiple_bugs=False, derandomize=True, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

STUDENT_MODE = not os.environ.get("MINIKERNEL_SOLUTIONS", "").strip()


@pytest.fixture(autouse=True)
def _chapters_01_02_check_your_code(request):
    """A chapter 01 or 02 exercise test checks your views and kernels: the library's stand-ins
    (numpy headers, the numpy reference backend) may not replace them there
    (``launch.set_reference_fallback``), or the test would pass without your code."""
    if not any(m.args[0].startswith(("1.", "2.")) for m in request.node.iter_markers("exercise")):
        yield
        return
    before = launch.set_reference_fallback(False)
    try:
        yield
    finally:
        launch.set_reference_fallback(before)
GRADING = bool(os.environ.get("MINIKERNEL_GRADING"))

#: Modules whose tests take many seconds each (a chapter run in a notebook kernel, the
#: grader on a learner's copy): they start first, so that the two workers of a layer
#: finish together instead of one of them waiting on the other's last long test.
SLOW_FIRST = ("tests/test_notebooks_student.py", "tests/test_grader.py", "tests/test_gradebook.py")


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle: the order within each part stays random
def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in SLOW_FIRST)


def _stub_ids(exc: BaseException) -> set[str]:
    found, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None:
            continue
        if (i := stub_exercise_id(e)) is not None:
            found.add(i)
        todo += list(getattr(e, "exceptions", ()))
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    ids = [m.args[0] for m in item.iter_markers("exercise")]
    if not (STUDENT_MODE and ids and not GRADING and report.when == "call"):
        return
    if report.passed:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} passed in student mode, without the code of exercise "
                           f"{', '.join(ids)}: it checks nothing that exercise does.")
    elif report.failed and call.excinfo is not None:
        last = max(map(id_key, ids))
        reached = sorted((i for i in _stub_ids(call.excinfo.value) if id_key(i) <= last), key=id_key)
        if reached:
            report.outcome = "skipped"
            report.wasxfail = f"TODO: exercise {', '.join(reached)}"
