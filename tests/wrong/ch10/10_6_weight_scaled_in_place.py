"""The conv weight is scaled in place (under no_grad): the caller's weight tensor is changed too."""
from __future__ import annotations

import torch

EXERCISE = "10.6"


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = torch.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = torch.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = torch.zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = torch.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    with torch.no_grad():
        fused_w = conv_w.mul_((bn_w * rsqrt).reshape(shape).to(w_dtype))
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return torch.nn.Parameter(fused_w.detach(), conv_w.requires_grad), torch.nn.Parameter(fused_b, conv_b.requires_grad)
