"""pytest plugin used by the grader: select exercise tests, record why each failed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from .exercise import stub_exercise_id

_results: list[dict] = []
_collect_errors: list[str] = []


def pytest_addoption(parser):
    parser.addoption("--mk-ids", default="", help="comma-separated exercise IDs to run")
    parser.addoption("--mk-results", default="", help="where to write the JSON results")


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
            if "Timeout" in type(exc).__name__ or "Timeout" in str(exc)[:40]:
                entry["detail"] = f"timed out after {item.config.getoption('--timeout')} s (an endless loop?)"
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
