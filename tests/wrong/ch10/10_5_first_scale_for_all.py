"""Every channel quantized with the first channel's scale and zero point."""
from __future__ import annotations

import torch

from minikernel.ao.quantization.quantize import check_per_channel_args

EXERCISE = "10.5"


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    qmin, qmax, int_dtype = check_per_channel_args(input, scales, zero_points, axis, dtype)
    inv = 1.0 / scales[:1].float()
    return torch.round(input * inv + zero_points[0]).clamp(qmin, qmax).to(int_dtype)
