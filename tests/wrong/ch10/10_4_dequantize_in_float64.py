"""Dequantization multiplies in float64 by the unrounded scale, then rounds to float32: torch multiplies two float32s."""
from __future__ import annotations

EXERCISE = "10.4"


def dequantize_per_tensor(input, scale, zero_point):
    return ((input.long() - zero_point).double() * scale).float()
