"""Per-channel dequantize subtracts the zero points in int64 before converting: torch converts q to float32 first, so large qint32 values differ."""
from __future__ import annotations

EXERCISE = "10.5"


def dequantize_per_channel(input, scales, zero_points, axis):
    shape = [1] * input.dim()
    shape[axis] = -1
    return ((input.long() - zero_points.long().reshape(shape)).double() * scales.double().reshape(shape)).float()
