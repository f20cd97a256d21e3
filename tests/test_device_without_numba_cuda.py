"""Where numba has no CUDA target at all (numba-cuda publishes no macOS build), the
"cuda" device says in one line that the simulator is not available on this platform.

Run in a fresh interpreter, since the device is chosen once, when minikernel is imported:
there ``importlib.util.find_spec`` answers as on such a platform (no ``numba_cuda``, a
``numba`` package without ``cuda/``), and no GPU or simulator variable is set.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import importlib.machinery, importlib.util, sys
real = importlib.util.find_spec
def find_spec(name, *args):
    if name == "numba_cuda":
        return None
    if name == "numba":
        spec = importlib.machinery.ModuleSpec("numba", None, is_package=True)
        spec.submodule_search_locations = [sys.argv[1]]  # a numba without cuda/
        return spec
    return real(name, *args)
importlib.util.find_spec = find_spec
from minikernel import device
importlib.util.find_spec = real
print(device.CUDA_BACKEND, device.is_available())
try:
    device.check_cuda()
except RuntimeError as exc:
    print(exc)
"""


def _probe(tmp_path: Path, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "CUDA_VISIBLE_DEVICES")}
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], cwd=ROOT, env={**clean, **env},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.splitlines()


def test_no_numba_cuda_means_the_simulator_is_unavailable_and_says_so(tmp_path):
    lines = _probe(tmp_path)
    assert lines[0] == "unavailable False"
    assert lines[1].startswith("minikernel's cuda device is unavailable: numba's CUDA simulator is not available "
                               "on this platform (")
    assert "GPU exercises (2.6-2.9, 5.6, 5.7)" in lines[1] and len(lines) == 2


def test_an_explicit_simulator_setting_is_still_honoured(tmp_path):
    assert _probe(tmp_path, NUMBA_ENABLE_CUDASIM="1")[0] == "simulator True"
