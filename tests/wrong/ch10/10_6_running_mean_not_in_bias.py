"""The fused bias is s·b + β: the running mean is never subtracted."""
from __future__ import annotations

import torch

EXERCISE = "10.6"


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    conv_b = torch.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = torch.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = torch.zeros_like(bn_rm) if bn_b is None else bn_b
    s = bn_w * torch.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    return (torch.nn.Parameter((conv_w * s.reshape(shape)).to(conv_w.dtype), conv_w.requires_grad),
            torch.nn.Parameter((conv_b * s + bn_b).to(conv_b.dtype), conv_b.requires_grad))


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    linear_b = torch.zeros_like(bn_rm) if linear_b is None else linear_b
    s = bn_w * torch.rsqrt(bn_rv + bn_eps)
    return (torch.nn.Parameter(linear_w * s.unsqueeze(-1), linear_w.requires_grad),
            torch.nn.Parameter(linear_b * s + bn_b, linear_b.requires_grad))
