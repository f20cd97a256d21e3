"""The wrong-solution corpus: grading runs only when asked for.

``tests/wrong/chNN/*.py`` are wrong bodies for the exercises (see README.md here).
``test_corpus_layout.py`` (cheap: every exercise has at least three cases, each case
is well formed) runs with the other tests. ``test_corpus.py`` grades every case, which
takes minutes, so it is collected only with ``MINIKERNEL_CORPUS=1``, and so is
``test_order.py`` (each exercise graded with only the references up to it on)::

    MINIKERNEL_CORPUS=1 .venv/bin/python -m pytest tests/wrong -p no:randomly
"""
from __future__ import annotations

import os

collect_ignore = [] if os.environ.get("MINIKERNEL_CORPUS", "").strip() not in ("", "0") else [
    "test_corpus.py", "test_order.py"]

#: Lines that test_corpus.py leaves for the end of the run (the catch rate and each miss).
SUMMARY: list[str] = []


def pytest_terminal_summary(terminalreporter):
    if SUMMARY:
        terminalreporter.section("wrong-solution corpus")
        for line in SUMMARY:
            terminalreporter.write_line(line)
