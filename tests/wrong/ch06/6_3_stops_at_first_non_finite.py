"""Unscaling stops at the first non-finite gradient, leaving the rest scaled."""
from __future__ import annotations

import torch

from minikernel.amp.scaling import OptState, Tensor

EXERCISE = "6.3"

_ERRORS = {
    ("unscale_", OptState.UNSCALED): "unscale_() has already been called on this optimizer since the last update().",
    ("unscale_", OptState.STEPPED): "unscale_() is being called after step().",
    ("step", OptState.STEPPED): "step() has already been called since the last update().",
}
_NEXT = {"unscale_": OptState.UNSCALED, "step": OptState.STEPPED, "update": OptState.READY}


def non_finite_check_and_unscale_(grads: list[Tensor], found_inf: Tensor, inv_scale: Tensor) -> None:
    for grad in grads:
        if not torch.isfinite(grad).all():
            found_inf.fill_(1.0)
            return
        grad.mul_(inv_scale)  # in float32 even for bf16/fp16 grads: inv_scale is a float32 tensor
