"""pytest plugin used by the grader: one forked process per exercise, results as JSON.

pytest collects the selected chapters' tests once (torch, numba and the tests are
imported once); then each exercise runs in its own forked child, in its own process
group, under a wall-clock limit (``grade_pool``). The child records every test's
outcome (and why it failed, in the learner's terms: ``grade_detail``) in
``<out>/<id>.json``, and before each test writes what it is about to run to
``<out>/<id>.progress``, so that a child killed for running too long, or dead from
a crash, can still be reported by the test it was running.
"""
from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

import pytest

from . import grade_pool
from .exercise import STUB_MESSAGE_RE, id_key, registry, stub_exercise_id
from .grade_detail import describe_failure, test_in_words


def pytest_addoption(parser):
    parser.addoption("--mk-ids", default="", help="comma-separated exercise IDs to run")
    parser.addoption("--mk-out", default="", help="folder for the per-exercise results")
    parser.addoption("--mk-timeout", type=float, default=60.0, help="seconds per exercise")
    parser.addoption("--mk-jobs", type=int, default=1, help="exercises graded at once")


def exercise_ids(item) -> list[str]:
    return [m.args[0] for m in item.iter_markers("exercise")]


def pytest_collection_modifyitems(config, items):
    wanted = set(config.getoption("--mk-ids").split(","))
    keep = [i for i in items if wanted & set(exercise_ids(i))]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep


def words_of(item) -> str:
    doc = getattr(getattr(item, "obj", None), "__doc__", None)
    return f"{item.path.name}: {test_in_words(item.name, doc)}"


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


class Recorder:
    """The child's record of its exercise's tests (a fresh one in each child)."""

    def __init__(self, out: Path, exercise_id: str):
        self.out, self.id = out, exercise_id
        self.results: list[dict] = []
        self.progress = open(out / f"{exercise_id}.progress", "a", buffering=1)  # noqa: SIM115

    def starting(self, item) -> None:
        self.progress.write(json.dumps({"nodeid": item.nodeid, "words": words_of(item)}) + "\n")
        self.progress.flush()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if not (report.when == "call" or (report.when == "setup" and report.outcome != "passed")):
            return
        entry = {"nodeid": item.nodeid, "exercises": exercise_ids(item), "outcome": report.outcome,
                 "stub": None, "detail": "", "words": words_of(item), "fields": {}}
        if call.excinfo is not None and report.outcome == "failed":
            exc = call.excinfo.value
            stubs = [s for s in map(stub_exercise_id, _exceptions(exc)) if s]
            entry["stub"] = stubs[0] if stubs else None
            if entry["stub"] is None:
                entry["detail"], entry["fields"] = describe_failure(exc, call.excinfo.tb, entry["words"])
        self.results.append(entry)

    def finish(self) -> None:
        tmp = self.out / f"{self.id}.json.tmp"
        tmp.write_text(json.dumps({"results": self.results}))
        tmp.replace(self.out / f"{self.id}.json")  # whole or absent: a crash never leaves half


def may_raise_own_stub(exercise_id: str) -> bool:
    """Whether the code in use for the exercise may still raise its own stub's error: one of
    its functions names the exercise in a ``NotImplementedError`` (a stub, or a body written
    above the stub's line that still reaches it). True when the source cannot be read."""
    entry = registry().get(exercise_id)
    if entry is None:
        return True
    for fn in entry.active.values():
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            return True
        if "NotImplementedError" in source and any(m[1] == exercise_id for m in STUB_MESSAGE_RE.finditer(source)):
            return True
    return False


def _settled(results: list[dict], exercise_id: str, stub_possible: bool) -> bool:
    """Whether no later test can change the exercise's verdict (see ``grade_report.classify``).

    Its own stub raised: TODO, whatever else happens. A test failed for another reason
    than a stub, and the exercise's code holds no stub of its own: FAIL, described by
    that first failure (a later BLOCKED or FAIL does not change it)."""
    if any(r["stub"] == exercise_id for r in results):
        return True
    return not stub_possible and any(r["outcome"] == "failed" and r["stub"] is None for r in results)


def run_exercise(session, exercise_id: str, items: list) -> None:
    """In the forked child: run one exercise's tests, record them, write the results.

    The tests stop once the verdict is settled (``_settled``): the report is the same,
    sooner, and a test that would hang after the deciding one is not reached."""
    recorder = Recorder(Path(session.config.getoption("--mk-out")), exercise_id)
    session.config.pluginmanager.register(recorder, "mk-recorder")
    stub_possible = may_raise_own_stub(exercise_id)
    for i, item in enumerate(items):
        recorder.starting(item)
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
        if session.shouldfail or session.shouldstop:  # -x / --maxfail, as pytest's own loop honours them
            break
        if _settled(recorder.results, exercise_id, stub_possible):
            break
    recorder.finish()


def pool_order(groups: dict[str, list]) -> dict[str, list]:
    """``groups`` (in ID order) with the exercise of the most tests moved first: it runs
    while the grading process warms up for the others (``run_all``'s ``warm``), on a core
    that would otherwise idle, so a long one is best there."""
    first = max(groups, key=lambda i: len(groups[i]), default=None)
    return {i: groups[i] for i in sorted(groups, key=lambda i: i != first)}


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """Grade each selected exercise in its own process (instead of pytest's own loop).

    Collection errors do not stop the run (pytest's loop would): they are recorded,
    and the exercises whose tests were collected are graded."""
    config = session.config
    out = Path(config.getoption("--mk-out"))
    groups: dict[str, list] = {i: [] for i in sorted(filter(None, config.getoption("--mk-ids").split(",")), key=id_key)}
    for item in session.items:
        for i in exercise_ids(item):
            if i in groups:
                groups[i].append(item)
    for exercise_id, items in groups.items():
        if not items:  # nothing to run: the verdict says no test carries its marker
            (out / f"{exercise_id}.json").write_text(json.dumps({"results": []}))
    (out / "collected").write_text(json.dumps({"pid": os.getpid()}))
    # Each failure is described by grade_detail from the exception itself; pytest's own
    # long report, which parses every file of the traceback, would go unread.
    config.option.tbstyle = "native"
    graded = pool_order({i: items for i, items in groups.items() if items})
    grade_pool.run_all(
        graded, lambda exercise_id, items: run_exercise(session, exercise_id, items),
        out=out, timeout_s=config.getoption("--mk-timeout"), jobs=config.getoption("--mk-jobs"),
        warm=grade_pool.warm_up if len(graded) > 1 else None)
    return True


def pytest_collectreport(report):
    if report.failed and _OUT:
        with open(Path(_OUT) / "collect_errors.txt", "a") as f:
            f.write(f"{report.nodeid}: {str(report.longrepr).strip().splitlines()[-1]}\n")


_OUT = ""  # --mk-out, set at configure time (collect reports carry no config)


def pytest_configure(config):
    global _OUT
    _OUT = config.getoption("--mk-out")
