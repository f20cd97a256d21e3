"""pytest plugin used by the grader: select exercise tests, record why each failed."""
from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from .exercise import stub_exercise_id

_results: list[dict] = []
_collect_errors: list[str] = []


def pytest_addoption(parser):
    parser.addoption("--mk-ids", default="", help="comma-separated exercise IDs to run")
    parser.addoption("--mk-results", default="", help="where to write the JSON results")
    parser.addoption("--mk-timeout", type=float, default=30.0, help="seconds per test")


class GradeTimeout(BaseException):
    """Raised in a test that runs too long.

    A BaseException on purpose: hypothesis would catch an Exception, count it as a
    failing example and call the endless code again while shrinking.
    """


def _on_alarm(signum, frame):
    raise GradeTimeout()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    seconds = item.config.getoption("--mk-timeout")
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def exercise_ids(item) -> list[str]:
    return [m.args[0] for m in item.iter_markers("exercise")]


def pytest_collection_modifyitems(config, items):
    wanted = set(config.getoption("--mk-ids").split(","))
    keep = [i for i in items if wanted & set(exercise_ids(i))]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep


def _exceptions(exc: BaseException):
    """exc, the members of exception groups and the chain of causes."""
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += list(getattr(e, "exceptions", ())) + [e.__cause__, e.__context__]


def _detail(exc: BaseException) -> str:
    message = f"{type(exc).__name__}: {exc}".strip()
    lines = message.splitlines()[:12]
    notes = [n for n in getattr(exc, "__notes__", []) if n.startswith(("Falsifying", "Failing"))]
    return "\n".join(lines + notes[:1])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        entry = {"nodeid": item.nodeid, "exercises": exercise_ids(item), "outcome": report.outcome,
                 "stub": None, "detail": ""}
        if call.excinfo is not None and report.outcome == "failed":
            exc = call.excinfo.value
            stubs = [s for s in map(stub_exercise_id, _exceptions(exc)) if s]
            entry["stub"] = stubs[0] if stubs else None
            if isinstance(exc, GradeTimeout):
                entry["detail"] = f"timed out after {item.config.getoption('--mk-timeout'):g} s (an endless loop?)"
            else:
                entry["detail"] = _detail(exc)
        _results.append(entry)


def pytest_collectreport(report):
    if report.failed:
        _collect_errors.append(f"{report.nodeid}: {str(report.longrepr).strip().splitlines()[-1]}")


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--mk-results")
    if path:
        Path(path).write_text(json.dumps({"results": _results, "collect_errors": _collect_errors}))
