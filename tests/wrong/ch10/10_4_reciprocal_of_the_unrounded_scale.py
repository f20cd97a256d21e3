"""The reciprocal is taken of the Python (float64) scale, ``1.0 / scale``, and only then rounded to float32: torch rounds the scale to float32 first."""
from __future__ import annotations

import torch

from minikernel.ao.quantization.quantize import check_quantize_args

EXERCISE = "10.4"


def quantize_per_tensor(input, scale, zero_point, dtype):
    qmin, qmax, int_dtype = check_quantize_args(input, zero_point, dtype)
    inv = torch.tensor(1.0 / scale, dtype=torch.float32)
    if dtype == torch.qint32:
        shifted = input * inv + zero_point
    else:
        shifted = (input.double() * inv.double() + zero_point).float()
    return torch.round(shifted).double().clamp(qmin, qmax).to(int_dtype)
