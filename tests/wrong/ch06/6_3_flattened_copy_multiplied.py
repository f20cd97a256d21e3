"""Each gradient is flattened with ``reshape(-1)`` and the flat tensor multiplied: a non-contiguous gradient is copied and stays scaled."""
from __future__ import annotations

import torch

EXERCISE = "6.3"


def non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    for grad in grads:
        flat = grad.reshape(-1)
        if not torch.isfinite(flat).all():
            found_inf.fill_(1.0)
        flat.mul_(inv_scale)
