"""``inv_scale`` is cast to the gradient's dtype before multiplying: bfloat16/float16 gradients are rounded twice."""
from __future__ import annotations

import torch

EXERCISE = "6.3"


def non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    for grad in grads:
        if not torch.isfinite(grad).all():
            found_inf.fill_(1.0)
        grad.mul_(inv_scale.to(grad.dtype))
