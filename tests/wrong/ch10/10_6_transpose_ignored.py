"""A ConvTranspose weight (in, out, ...) is scaled along dim 0, the input channels."""
from __future__ import annotations

import torch

EXERCISE = "10.6"


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = torch.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = torch.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = torch.zeros_like(bn_rm) if bn_b is None else bn_b
    s = bn_w * torch.rsqrt(bn_rv + bn_eps)
    fused_w = conv_w * s.reshape([-1] + [1] * (conv_w.dim() - 1))
    return (torch.nn.Parameter(fused_w.to(w_dtype), conv_w.requires_grad),
            torch.nn.Parameter(((conv_b - bn_rm) * s + bn_b).to(b_dtype), conv_b.requires_grad))
