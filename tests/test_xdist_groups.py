"""The test layers run under pytest-xdist's ``--dist loadgroup``: the tests of one
``xdist_group`` (those that share a fixture that takes seconds to build: the
gradebook's class, the GPU kernels lowered for a real GPU, a visdom server) must run
in one worker, or each worker builds the fixture again. pytest 9.2 with pytest-xdist
3.8 silently stopped grouping (constraints.txt pins pytest below it); this checks the
installed pair on a throwaway test file.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.own_mode  # pytest and xdist alone: the course's mode cannot change the outcome

GROUPED = '''
import pytest

pytestmark = pytest.mark.xdist_group("shared")


@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    pass
'''


def test_loadgroup_sends_a_group_to_one_worker(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                           "-p", "no:cacheprovider", "test_grouped.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    workers = re.findall(r"\[(gw\d+)\].*PASSED .*test_grouped", proc.stdout)
    assert len(workers) == 6, proc.stdout[-2000:]
    assert len(set(workers)) == 1, f"the group ran on {sorted(set(workers))}: --dist loadgroup does not group"
