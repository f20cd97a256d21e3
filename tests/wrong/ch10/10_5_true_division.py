"""Divides by the scale instead of multiplying by its float32 inverse, as torch's kernel does: ties round differently."""
from __future__ import annotations

import torch

from minikernel.ao.quantization.quantize import check_per_channel_args

EXERCISE = "10.5"


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    qmin, qmax, int_dtype = check_per_channel_args(input, scales, zero_points, axis, dtype)
    shape = [1] * input.dim()
    shape[axis] = -1
    zp = zero_points.reshape(shape)
    return torch.round(input / scales.float().reshape(shape) + zp).double().clamp(qmin, qmax).to(int_dtype)
