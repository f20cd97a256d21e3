"""The fused weight and bias keep the dtype of the arithmetic: float64 batch-norm statistics turn a float32 conv into float64."""
from __future__ import annotations

import torch

EXERCISE = "10.6"


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    conv_b = torch.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = torch.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = torch.zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = torch.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    fused_w = conv_w * (bn_w * rsqrt).reshape(shape)
    fused_b = (conv_b - bn_rm) * rsqrt * bn_w + bn_b
    return torch.nn.Parameter(fused_w, conv_w.requires_grad), torch.nn.Parameter(fused_b, conv_b.requires_grad)
