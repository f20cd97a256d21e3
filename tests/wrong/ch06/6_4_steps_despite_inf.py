"""The optimizer steps even when an inf or NaN was found."""
from __future__ import annotations

from typing import Any

import torch

from minikernel.amp.scaling import FoundInfPerDevice, OptState

EXERCISE = "6.4"

_ERRORS = {
    ("unscale_", OptState.UNSCALED): "unscale_() has already been called on this optimizer since the last update().",
    ("unscale_", OptState.STEPPED): "unscale_() is being called after step().",
    ("step", OptState.STEPPED): "step() has already been called since the last update().",
}
_NEXT = {"unscale_": OptState.UNSCALED, "step": OptState.STEPPED, "update": OptState.READY}


def maybe_opt_step(optimizer: torch.optim.Optimizer, found_inf_per_device: FoundInfPerDevice,
                   *args: Any, **kwargs: Any) -> Any:
    if len(found_inf_per_device) == 0:
        raise AssertionError("No inf checks were recorded for this optimizer.")
    if True:
        return optimizer.step(*args, **kwargs)
    return None
