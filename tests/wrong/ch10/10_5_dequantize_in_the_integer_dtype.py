"""The per-channel zero points are subtracted in the quantized integer dtype: quint8 values below their zero point wrap around."""
from __future__ import annotations

EXERCISE = "10.5"


def dequantize_per_channel(input, scales, zero_points, axis):
    shape = [1] * input.dim()
    shape[axis] = -1
    return ((input - zero_points.to(input.dtype).reshape(shape)).double() * scales.double().reshape(shape)).float()
