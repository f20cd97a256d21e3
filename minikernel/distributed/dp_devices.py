"""``torch.nn.DataParallel``'s ``device_ids[0]`` check, run on a machine without GPUs.

``DataParallel`` does nothing on a machine without an accelerator: ``__init__`` sees no
device type and keeps ``device_ids = []``, and ``forward`` just calls the module. Its
checks run once ``torch._utils._get_available_device_type()`` names a device type.
Besides CUDA, MPS and XPU, it asks PyTorch's slot for out-of-tree backends,
*privateuse1* (named ``"privateuseone"`` until renamed): if ``torch.privateuseone`` is
a module whose ``is_available()`` is true, DataParallel uses it, with
``device_count()`` devices.

``stand_in_devices(n)`` registers such a module — it reports ``n`` devices and has no
kernels, so no tensor can be put on it — and torch's own ``DataParallel.__init__`` and
``forward`` then run up to the check that every parameter and buffer is on
``device_ids[0]``, which fails for a module left on the CPU. The registration holds
for the rest of the process and cannot be undone: call it in a process of its own
(``run_ranks(dataparallel_checks, 1)``).
"""
from __future__ import annotations

import types

import torch

from .ddp import ToyModel


def stand_in_devices(n: int = 2) -> types.ModuleType:
    """Register a privateuse1 device module that says ``n`` devices are available (process-wide)."""
    module = types.ModuleType("privateuseone")
    module.is_available = lambda: True
    module.device_count = lambda: n
    torch._register_device_module("privateuseone", module)
    return module


def dataparallel_checks(n: int = 2) -> dict:
    """In a process of its own: ``DataParallel(ToyModel(), device_ids=[0 .. n-1])`` on stand-in
    devices, its attributes, and what its forward says about the module left on the CPU."""
    stand_in_devices(n)
    dp = torch.nn.DataParallel(ToyModel(), device_ids=list(range(n)))
    try:
        dp(torch.randn(4, 10))
        error = "no error"
    except RuntimeError as err:
        error = f"RuntimeError: {err}"
    return {"device_ids": dp.device_ids, "src_device_obj": str(dp.src_device_obj),
            "output_device": dp.output_device, "forward": error}
