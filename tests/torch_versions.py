"""The installed torch's release, for the few checks whose torch counterpart changed
between the releases the course admits (pyproject.toml: torch 2.6 to 2.13).

The exercises' docstrings quote the words and behaviour of the pinned torch
(constraints.txt: 2.13). Where an older torch says or does something else, a test
compares with what the docstring specifies instead of with that torch, and the
comparison with torch itself stays for every release from the one named ``since``
(the oldest release it was checked with that says or does what the docstring quotes):

    expected = quoted_since("2.11", str(torch_error), documented=f"invalid shape dimension ...")

A check that has no such stand-in (a torch feature absent from the older release) is
skipped there with ``skip_before``, whose reason names the release.
"""
from __future__ import annotations

from typing import TypeVar

import pytest
import torch
from packaging.version import Version

T = TypeVar("T")

#: (major, minor) of the installed torch: (2, 6) for "2.6.0+cu124".
INSTALLED: tuple[int, int] = Version(torch.__version__).release[:2]


def _release(since: str) -> tuple[int, int]:
    parts = Version(since).release
    if len(parts) != 2:
        raise ValueError(f"name a torch release as 'MAJOR.MINOR' (e.g. '2.11'), got {since!r}")
    return parts


def torch_before(since: str) -> bool:
    """Whether the installed torch is older than release ``since`` ("2.11")."""
    return INSTALLED < _release(since)


def quoted_since(since: str, from_torch: T, documented: T) -> T:
    """What a check compares with: ``from_torch`` (what the installed torch said or did)
    from release ``since`` on, where torch says what the exercise's docstring quotes;
    before it, ``documented`` (the docstring's words or behaviour, built by the test)."""
    return documented if torch_before(since) else from_torch


def skip_before(since: str, what: str) -> pytest.MarkDecorator:
    """Skip a test (or one parametrized case) on a torch older than ``since``; the
    reason names the installed release and what it lacks."""
    return pytest.mark.skipif(torch_before(since),
                              reason=f"torch {torch.__version__} predates {since}: {what}")
