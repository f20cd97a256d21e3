"""found_inf is incremented for each gradient with an inf, not set to 1."""
from __future__ import annotations

from collections import abc, defaultdict
from typing import Any

import torch

import minikernel.amp.scaling as mk
from minikernel.amp.scaling import FoundInfPerDevice, OptState, Outputs, ScaleOn, Tensor

_ERRORS = {
    ("unscale_", OptState.UNSCALED): "unscale_() has already been called on this optimizer since the last update().",
    ("unscale_", OptState.STEPPED): "unscale_() is being called after step().",
    ("step", OptState.STEPPED): "step() has already been called since the last update().",
}
_NEXT = {"unscale_": OptState.UNSCALED, "step": OptState.STEPPED, "update": OptState.READY}

EXERCISE = "6.3"


def scale_outputs(outputs: Outputs, scale_on: ScaleOn) -> Outputs:
    if isinstance(outputs, torch.Tensor):
        return outputs * scale_on(outputs.device)
    if isinstance(outputs, abc.Iterable):
        scaled = map(lambda item: scale_outputs(item, scale_on), outputs)
        # lists and tuples keep their type; any other iterable stays lazy, like torch's
        return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
    raise ValueError("outputs must be a Tensor or an iterable of Tensors")


def transition(stage: OptState, method: str) -> OptState:
    if method not in _NEXT:
        raise ValueError(f"unknown GradScaler method {method!r}: the stage changes only on "
                         "'unscale_', 'step' or 'update'")
    if (method, stage) in _ERRORS:
        raise RuntimeError(_ERRORS[method, stage])
    return _NEXT[method]


def non_finite_check_and_unscale_(grads: list[Tensor], found_inf: Tensor, inv_scale: Tensor) -> None:
    for grad in grads:
        if not torch.isfinite(grad).all():
            found_inf.add_(1.0)
        grad.mul_(inv_scale)  # in float32 even for bf16/fp16 grads: inv_scale is a float32 tensor


def unscale_grads_(optimizer: torch.optim.Optimizer, inv_scale: Tensor, found_inf: Tensor,
                   allow_fp16: bool) -> FoundInfPerDevice:
    groups: dict[torch.device, dict[torch.dtype, list[Tensor]]] = defaultdict(lambda: defaultdict(list))
    with torch.no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if not allow_fp16 and param.grad.dtype == torch.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                groups[param.grad.device][param.grad.dtype].append(param.grad)
        found_per_device: FoundInfPerDevice = {}
        for device, by_dtype in groups.items():
            found_per_device[device] = found_inf.to(device, copy=True)
            inv_here = inv_scale.to(device, copy=True)
            for grads in by_dtype.values():
                mk.non_finite_check_and_unscale_(grads, found_per_device[device], inv_here)
    return found_per_device


def maybe_opt_step(optimizer: torch.optim.Optimizer, found_inf_per_device: FoundInfPerDevice,
                   *args: Any, **kwargs: Any) -> Any:
    if len(found_inf_per_device) == 0:
        raise AssertionError("No inf checks were recorded for this optimizer.")
    if not sum(v.item() for v in found_inf_per_device.values()):
        return optimizer.step(*args, **kwargs)
    return None


def update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor, growth_factor: float,
                  backoff_factor: float, growth_interval: int) -> Tensor:
    if found_inf.item():
        scale.fill_(scale.item() * backoff_factor)  # float64 product, rounded to float32 once
        growth_tracker.fill_(0)
        return scale
    successful = int(growth_tracker.item()) + 1
    if successful == growth_interval:
        grown = torch.tensor(scale.item() * growth_factor, dtype=torch.float32)
        if torch.isfinite(grown):  # never grow past float32's range to inf
            scale.copy_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)
    return scale
