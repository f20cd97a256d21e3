"""unscale_grads_ runs without torch.no_grad(): a gradient that requires grad (after backward(create_graph=True)) gets the in-place multiply recorded into its graph."""
EXERCISE = "6.3"

from collections import defaultdict

import torch

import minikernel.amp.scaling as mk


def unscale_grads_(optimizer, inv_scale, found_inf, allow_fp16):
    groups = defaultdict(lambda: defaultdict(list))
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is None:
                continue
            if not allow_fp16 and param.grad.dtype == torch.float16:
                raise ValueError("Attempting to unscale FP16 gradients.")
            groups[param.grad.device][param.grad.dtype].append(param.grad)
    found_per_device = {}
    for device, by_dtype in groups.items():
        found_per_device[device] = found_inf.to(device, copy=True)
        inv_here = inv_scale.to(device, copy=True)
        for grads in by_dtype.values():
            mk.non_finite_check_and_unscale_(grads, found_per_device[device], inv_here)
    return found_per_device
