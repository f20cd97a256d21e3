"""After growing the scale the tracker keeps counting (set to successful) instead of restarting at 0: the next growth never comes."""
EXERCISE = "6.5"

import torch


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    if found_inf.item():
        scale.fill_(scale.item() * backoff_factor)
        growth_tracker.fill_(0)
        return scale
    successful = int(growth_tracker.item()) + 1
    if successful == growth_interval:
        grown = torch.tensor(scale.item() * growth_factor, dtype=torch.float32)
        if torch.isfinite(grown):
            scale.copy_(grown)
    growth_tracker.fill_(successful)
    return scale
