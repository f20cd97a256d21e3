"""Returns plain tensors: assigning them to a module's weight raises (a Parameter is expected)."""
from __future__ import annotations

import torch

EXERCISE = "10.6"


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    linear_b = torch.zeros_like(bn_rm) if linear_b is None else linear_b
    s = bn_w * torch.rsqrt(bn_rv + bn_eps)
    return (linear_w * s.unsqueeze(-1)).detach(), ((linear_b - bn_rm) * s + bn_b).detach()
