"""Dequantizes as q·scale − zero_point instead of (q − zero_point)·scale."""
from __future__ import annotations

import torch

EXERCISE = "10.4"


def dequantize_per_tensor(input, scale, zero_point):
    return input.float() * torch.tensor(scale, dtype=torch.float32) - zero_point
