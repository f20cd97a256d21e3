"""The FP16 check is made group by group while unscaling: the groups unscaled before the float16 one have already been multiplied when it raises."""
EXERCISE = "6.3"

from collections import defaultdict

import torch

import minikernel.amp.scaling as mk


def unscale_grads_(optimizer, inv_scale, found_inf, allow_fp16):
    groups = defaultdict(lambda: defaultdict(list))
    with torch.no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    groups[param.grad.device][param.grad.dtype].append(param.grad)
        found_per_device = {}
        for device, by_dtype in groups.items():
            found_per_device[device] = found_inf.to(device, copy=True)
            inv_here = inv_scale.to(device, copy=True)
            for dtype, grads in by_dtype.items():
                if dtype == torch.float16 and not allow_fp16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                mk.non_finite_check_and_unscale_(grads, found_per_device[device], inv_here)
    return found_per_device
