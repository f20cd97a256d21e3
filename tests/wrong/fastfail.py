"""pytest plugin the corpus layer adds to the grader's run (through ``PYTEST_ADDOPTS``).

A wrong solution needs one failing test to grade FAIL, so the corpus spends no time
on what only the detail text uses:

* hypothesis does not shrink a failing example (the same examples are generated,
  ``derandomize`` as in the grader's profile, so the verdict is the same);
* ``-x`` (given beside this plugin) stops at the first failing test.

The verdicts PASS and FAIL do not change; only the detail is less polished.
"""
from __future__ import annotations

from hypothesis import Phase, settings


def pytest_configure(config):
    # After the initial conftest loaded the grader's profile, before test modules are
    # imported (their @settings(...) derive from the profile loaded now).
    base = settings.default
    settings.register_profile("corpus", parent=base,
                              phases=[p for p in base.phases if p not in (Phase.shrink, Phase.explain)])
    settings.load_profile("corpus")
