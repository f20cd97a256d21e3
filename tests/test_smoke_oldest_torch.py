"""The smoke layer installs the course beside the oldest torch pyproject.toml admits
(tools/smoke.py's OLDEST_TORCH), and the environment test checks the range from that same
release: the three must agree, or the layer would vouch for a torch the course does not admit.
"""
from __future__ import annotations

import sys
from pathlib import Path

from packaging.version import Version

from tests.test_environment import OLDEST_TORCH, pyproject_requirements

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import smoke  # noqa: E402  (tools/ is not a package)


def test_the_smoke_layer_installs_the_oldest_torch_pyproject_admits():
    assert smoke.OLDEST_TORCH == OLDEST_TORCH
    torch = next(r for r in pyproject_requirements() if r.name == "torch")
    oldest = Version(smoke.OLDEST_TORCH)
    assert torch.specifier.contains(smoke.OLDEST_TORCH)
    assert not torch.specifier.contains(f"{oldest.major}.{oldest.minor - 1}.99")
