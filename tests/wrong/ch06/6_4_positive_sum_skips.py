"""The step is skipped only when the sum is positive: a NaN ``found_inf`` steps anyway."""
from __future__ import annotations

EXERCISE = "6.4"


def maybe_opt_step(optimizer, found_inf_per_device, *args, **kwargs):
    if len(found_inf_per_device) == 0:
        raise AssertionError("No inf checks were recorded for this optimizer.")
    if not sum(v.item() for v in found_inf_per_device.values()) > 0:
        return optimizer.step(*args, **kwargs)
    return None
