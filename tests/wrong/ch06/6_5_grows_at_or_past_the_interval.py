"""The scale grows when the count reaches *or passes* ``growth_interval`` (``>=``): a tracker already past it grows at once."""
from __future__ import annotations

import torch

EXERCISE = "6.5"


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    if found_inf.item():
        scale.fill_(scale.item() * backoff_factor)
        growth_tracker.fill_(0)
        return scale
    successful = int(growth_tracker.item()) + 1
    if successful >= growth_interval:
        grown = torch.tensor(scale.item() * growth_factor, dtype=torch.float32)
        if torch.isfinite(grown):
            scale.copy_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)
    return scale
