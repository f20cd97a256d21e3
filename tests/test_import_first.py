"""Every top-level minikernel module can be the first one imported.

Importing ``minikernel.X`` runs ``minikernel/__init__.py`` first, which imports the whole
package: a module that needs another one's names at import time, or numba before the
GPU/simulator choice (``numba_setup.py``), would fail here or leave the operators
unregistered. Each case starts a fresh interpreter, imports one module first, and then
checks a few operators (kernels, reference backend, views, autograd, copies to the CUDA device)
against torch.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from minikernel import device

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "minikernel"
#: ``python -m minikernel``'s entry point (importing it runs the command line), and numba's
#: memory-manager plugin, which imports numba's GPU driver and is loaded only on a GPU.
NOT_IMPORTABLE_FIRST = {"__main__"} | (set() if device.CUDA_BACKEND == "gpu" else {"cuda_allocator"})
TOP_LEVEL = sorted({p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
                   | {p.parent.name for p in PACKAGE.glob("*/__init__.py")})

_CHECK = """
import importlib, sys
first = importlib.import_module(sys.argv[1])
import torch
import minikernel as mk
assert mk.device.CUDA_BACKEND != "unavailable", mk.device.CUDA_REASON
a = torch.tensor([[1.0, 4.0], [9.0, 16.0]], dtype=torch.float64, requires_grad=True)
x = mk.Tensor.from_torch(a.detach().clone()).requires_grad_()
for mine, theirs in [(x + x * 2, a + a * 2), (x.sqrt(), a.sqrt()), (x @ x.t(), a @ a.t()),
                     (x.sum(0), a.sum(0)), ((x > 2), (a > 2)), (x[1], a[1]), (mk.cat([x, x]), torch.cat([a, a])),
                     (x.detach().cuda().cpu(), a.detach()), (mk.ones([2], device="cuda").cpu(), torch.ones(2))]:
    torch.testing.assert_close(mine.detach().to_torch(), theirs.detach())
try:
    (x * x).sum().backward()
except NotImplementedError as stub:  # student mode: chapter 03's engine is an exercise
    assert "exercise 3." in str(stub), stub
else:
    torch.testing.assert_close(x.grad.to_torch(), 2 * a.detach())
print("ok", sys.argv[1])
"""


def test_the_list_sees_the_package():
    assert {"tensor", "device", "aten", "autograd", "kernels", "strides", "numba_setup"} <= set(TOP_LEVEL)


@pytest.mark.parametrize("name", [n for n in TOP_LEVEL if n not in NOT_IMPORTABLE_FIRST])
def test_a_module_imported_first_leaves_the_operators_working(name):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}  # the choice is minikernel's
    proc = subprocess.run([sys.executable, "-c", _CHECK, f"minikernel.{name}"], capture_output=True, text=True,
                          cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith(f"ok minikernel.{name}"), proc.stderr[-3000:]
