"""The zero point is subtracted in the quantized integer dtype: uint8 values below the zero point wrap around."""
from __future__ import annotations

import torch

EXERCISE = "10.4"


def dequantize_per_tensor(input, scale, zero_point):
    return (input - zero_point).float() * torch.tensor(scale, dtype=torch.float32)
