"""Rounds half away from zero (floor(|v| + 0.5)) instead of half to even."""
from __future__ import annotations

import torch

from minikernel.ao.quantization.quantize import check_quantize_args

EXERCISE = "10.4"


def quantize_per_tensor(input, scale, zero_point, dtype):
    qmin, qmax, int_dtype = check_quantize_args(input, zero_point, dtype)
    inv = 1.0 / torch.tensor(scale, dtype=torch.float32)
    v = input * inv
    rounded = torch.sign(v) * torch.floor(v.abs() + 0.5)
    return (rounded + zero_point).clamp(qmin, qmax).to(int_dtype)
