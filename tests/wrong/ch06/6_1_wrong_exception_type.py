"""A non-tensor output raises TypeError instead of torch's ValueError."""
from __future__ import annotations

from collections import abc

import torch

from minikernel.amp.scaling import OptState, Outputs, ScaleOn

EXERCISE = "6.1"

_ERRORS = {
    ("unscale_", OptState.UNSCALED): "unscale_() has already been called on this optimizer since the last update().",
    ("unscale_", OptState.STEPPED): "unscale_() is being called after step().",
    ("step", OptState.STEPPED): "step() has already been called since the last update().",
}
_NEXT = {"unscale_": OptState.UNSCALED, "step": OptState.STEPPED, "update": OptState.READY}


def scale_outputs(outputs: Outputs, scale_on: ScaleOn) -> Outputs:
    if isinstance(outputs, torch.Tensor):
        return outputs * scale_on(outputs.device)
    if isinstance(outputs, abc.Iterable):
        scaled = (scale_outputs(item, scale_on) for item in outputs)
        # lists and tuples keep their type; any other iterable stays lazy, like torch's
        return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
    raise TypeError("outputs must be a Tensor or an iterable of Tensors")
