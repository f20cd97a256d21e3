"""Off by one: the scale grows after growth_interval + 1 clean steps."""
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
        scale.fill_(scale.item() * backoff_factor)  # float64 product, rounded to float32 once
        growth_tracker.fill_(0)
        return scale
    successful = int(growth_tracker.item()) + 1
    if successful > growth_interval:
        grown = torch.tensor(scale.item() * growth_factor, dtype=torch.float32)
        if torch.isfinite(grown):  # never grow past float32's range to inf
            scale.copy_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)
    return scale
