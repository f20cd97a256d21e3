"""The fused bias takes ``requires_grad`` from the weight; torch takes it from the bias (zeros when there was none: not trainable)."""
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
    fused_w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(dtype=w_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return torch.nn.Parameter(fused_w, conv_w.requires_grad), torch.nn.Parameter(fused_b, conv_w.requires_grad)


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = torch.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * torch.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return torch.nn.Parameter(fused_w, linear_w.requires_grad), torch.nn.Parameter(fused_b, linear_w.requires_grad)
