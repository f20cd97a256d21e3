"""check_quantize_args is skipped: a float64 input, or a zero point outside the type's range, is quantized anyway."""
from __future__ import annotations

import torch

from minikernel.ao.quantization.quantize import QRANGES

EXERCISE = "10.4"


def quantize_per_tensor(input, scale, zero_point, dtype):
    qmin, qmax, int_dtype = QRANGES[dtype]
    input = input.float()
    inv = 1.0 / torch.tensor(scale, dtype=torch.float32)
    if dtype == torch.qint32:
        shifted = input * inv + zero_point
    else:
        shifted = (input.double() * inv.double() + zero_point).float()
    return torch.round(shifted).double().clamp(qmin, qmax).to(int_dtype)
