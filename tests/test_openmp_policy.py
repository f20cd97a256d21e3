"""OpenMP's wait policy: ``PASSIVE`` for the grading commands, set before torch loads
OpenMP; every other command and use keeps OpenMP's default (``minikernel/openmp_policy.py``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from minikernel import openmp_policy
from minikernel.openmp_policy import minikernel_command, set_for_grading

ROOT = Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"


@pytest.mark.parametrize("argv, command", [
    ([PY, "-m", "minikernel", "grade", "1.2"], "grade"),
    ([PY, "-m", "minikernel", "grade"], "grade"),
    ([PY, "-mminikernel", "gradebook", "subs", "--out", "x"], "gradebook"),
    ([PY, "-X", "importtime", "-u", "-m", "minikernel", "bench", "--quick"], "bench"),
    ([PY, "-W", "ignore", "-m", "minikernel", "grade"], "grade"),
    ([PY, "-m", "minikernel"], None),
    ([PY, "-m"], None),
    ([PY, "-m", "pytest", "tests", "-m", "minikernel", "grade"], None),
    ([PY, "-m", "minikernel.course.grading", "grade"], None),
    ([PY, "-c", "import minikernel", "-m", "minikernel", "grade"], None),
    ([PY, "script.py", "-m", "minikernel", "grade"], None),
    ([PY, "-", "-m", "minikernel", "grade"], None),
    ([PY], None),
])
def test_the_command_is_read_from_the_interpreters_command_line(argv, command):
    assert minikernel_command(argv) == command


@pytest.mark.parametrize("argv, before, after", [
    ([PY, "-m", "minikernel", "grade", "1.2"], {}, {"OMP_WAIT_POLICY": "PASSIVE"}),
    ([PY, "-m", "minikernel", "gradebook", "subs"], {"X": "1"}, {"X": "1", "OMP_WAIT_POLICY": "PASSIVE"}),
    ([PY, "-m", "minikernel", "grade"], {"OMP_WAIT_POLICY": "ACTIVE"}, {"OMP_WAIT_POLICY": "ACTIVE"}),
    ([PY, "-m", "minikernel", "bench"], {}, {}),
    ([PY, "-m", "minikernel", "lab"], {}, {}),
    ([PY, "-m", "pytest", "tests/ch01"], {}, {}),
])
def test_only_the_grading_commands_get_the_passive_policy(argv, before, after):
    environ = dict(before)
    assert set_for_grading(argv, environ) == (after != before)
    assert environ == after


#: Put on the command's path as ``sitecustomize``: reports the policy at the moment torch
#: is first imported, which is when OpenMP reads it.
_WATCH = """
import os, sys
class _Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            sys.meta_path.remove(self)
            sys.stderr.write("policy when torch loads: %s\\n" % os.environ.get("OMP_WAIT_POLICY"))
        return None
sys.meta_path.insert(0, _Watch())
"""


@pytest.mark.parametrize("command, policy", [("grade", "PASSIVE"), ("bench", "None")])
def test_the_policy_is_in_place_before_torch_loads(tmp_path, command, policy):
    (tmp_path / "sitecustomize.py").write_text(_WATCH)
    env = {k: v for k, v in os.environ.items() if k != openmp_policy.VARIABLE}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    proc = subprocess.run([sys.executable, "-m", "minikernel", command, "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"policy when torch loads: {policy}\n" in proc.stderr, proc.stderr[-3000:]
