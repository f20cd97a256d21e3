"""The installed torch's release, where the library shows what torch shows.

The course admits torch 2.6 to 2.13 (pyproject.toml). A few things the library prints
as torch does changed between those releases; the library follows the installed one,
through ``torch_at_least``, here and nowhere else:

* ``nn.LayerNorm``'s repr names ``bias=`` from torch 2.12 on
  (``LayerNorm((3, 4), eps=1e-05, elementwise_affine=True, bias=True)``), not before.
"""
from __future__ import annotations

import re

import torch

#: (major, minor) of the installed torch: (2, 6) for "2.6.0+cu124".
TORCH_RELEASE: tuple[int, int] = tuple(int(p) for p in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())


def torch_at_least(major: int, minor: int) -> bool:
    """Whether the installed torch is release ``major.minor`` or newer."""
    return TORCH_RELEASE >= (major, minor)
