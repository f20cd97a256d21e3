"""Dequantize converts to float32 before subtracting the zero point: a qint32 value far from 0 is rounded twice."""
from __future__ import annotations

import torch

EXERCISE = "10.4"


def dequantize_per_tensor(input, scale, zero_point):
    return (input.float() - zero_point) * torch.tensor(scale, dtype=torch.float32)
