"""Dequantizes per channel in float32; torch multiplies by the float64 scales."""
from __future__ import annotations

EXERCISE = "10.5"


def dequantize_per_channel(input, scales, zero_points, axis):
    shape = [1] * input.dim()
    shape[axis] = -1
    return (input.long() - zero_points.reshape(shape)).float() * scales.float().reshape(shape)
