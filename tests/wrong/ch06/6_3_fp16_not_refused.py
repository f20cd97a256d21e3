"""FP16 gradients are unscaled even when allow_fp16 is False."""
from __future__ import annotations

from collections import defaultdict

import torch

import minikernel.amp.scaling as mk
from minikernel.amp.scaling import FoundInfPerDevice, OptState, Tensor

EXERCISE = "6.3"

_ERRORS = {
    ("unscale_", OptState.UNSCALED): "unscale_() has already been called on this optimizer since the last update().",
    ("unscale_", OptState.STEPPED): "unscale_() is being called after step().",
    ("step", OptState.STEPPED): "step() has already been called since the last update().",
}
_NEXT = {"unscale_": OptState.UNSCALED, "step": OptState.STEPPED, "update": OptState.READY}


def unscale_grads_(optimizer: torch.optim.Optimizer, inv_scale: Tensor, found_inf: Tensor,
                   allow_fp16: bool) -> FoundInfPerDevice:
    groups: dict[torch.device, dict[torch.dtype, list[Tensor]]] = defaultdict(lambda: defaultdict(list))
    with torch.no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                groups[param.grad.device][param.grad.dtype].append(param.grad)
        found_per_device: FoundInfPerDevice = {}
        for device, by_dtype in groups.items():
            found_per_device[device] = found_inf.to(device, copy=True)
            inv_here = inv_scale.to(device, copy=True)
            for grads in by_dtype.values():
                mk.non_finite_check_and_unscale_(grads, found_per_device[device], inv_here)
    return found_per_device
