"""The scale is multiplied in float32 (tensor.mul_) where torch computes the product in float64."""
from __future__ import annotations

import torch

from minikernel.amp.scaling import OptState, Tensor

EXERCISE = "6.5"

_ERRORS = {
    ("unscale_", OptState.UNSCALED): "unscale_() has already been called on this optimizer since the last update().",
    ("unscale_", OptState.STEPPED): "unscale_() is being called after step().",
    ("step", OptState.STEPPED): "step() has already been called since the last update().",
}
_NEXT = {"unscale_": OptState.UNSCALED, "step": OptState.STEPPED, "update": OptState.READY}


def update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor, growth_factor: float,
                  backoff_factor: float, growth_interval: int) -> Tensor:
    if found_inf.item():
        scale.mul_(backoff_factor)  # float64 product, rounded to float32 once
        growth_tracker.fill_(0)
        return scale
    successful = int(growth_tracker.item()) + 1
    if successful == growth_interval:
        grown = scale * growth_factor
        if torch.isfinite(grown):  # never grow past float32's range to inf
            scale.copy_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)
    return scale
