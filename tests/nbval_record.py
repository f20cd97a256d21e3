"""pytest plugin: keep what nbval saw in each cell, for tests/test_notebooks_student.py.

Loaded with ``-p tests.nbval_record --record-cells=FILE`` beside ``--nbval``. At the end
of the session FILE holds one entry per notebook cell item, in run order:
``{"notebook", "cell", "outcome", "failure", "outputs"}`` — ``outputs`` are the cell's
outputs as the kernel produced them this run (nbval's ``test_outputs``), ``failure``
nbval's report when the cell failed (outputs differ, an exception, a dead kernel).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

_CELLS: list[dict] = []


def pytest_addoption(parser):
    parser.addoption("--record-cells", default="", help="write each nbval cell's outputs and verdict to this file")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _CELLS.append({"notebook": item.path.name, "cell": item.name, "outcome": report.outcome,
                       "failure": str(report.longrepr) if report.failed else "",
                       "outputs": list(getattr(item, "test_outputs", None) or [])})


def pytest_sessionfinish(session):
    path = session.config.getoption("--record-cells")
    if path:
        Path(path).write_text(json.dumps(_CELLS))
