"""Gradients are grouped by dtype only, with ``found_inf`` and ``inv_scale`` on the first gradient's device: gradients on another device share them."""
from __future__ import annotations

from collections import defaultdict

import torch

import minikernel.amp.scaling as mk

EXERCISE = "6.3"


def unscale_grads_(optimizer, inv_scale, found_inf, allow_fp16):
    by_dtype = defaultdict(list)
    with torch.no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if not allow_fp16 and param.grad.dtype == torch.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                by_dtype[param.grad.dtype].append(param.grad)
        if not by_dtype:
            return {}
        device = next(iter(by_dtype.values()))[0].device
        found = found_inf.to(device, copy=True)
        inv_here = inv_scale.to(device, copy=True)
        for grads in by_dtype.values():
            mk.non_finite_check_and_unscale_(grads, found, inv_here)
    return {device: found}
