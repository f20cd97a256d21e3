"""Reference solutions for exercises 10.4 and 10.5 (``minikernel/ao/quantization/quantize.py``)."""
from __future__ import annotations

import torch

from minikernel.ao.quantization.quantize import (
    check_per_channel_args,
    check_quantize_args,
)


def quantize_per_tensor(input: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    qmin, qmax, int_dtype = check_quantize_args(input, zero_point, dtype)
    inv = 1.0 / torch.tensor(scale, dtype=torch.float32)
    if dtype == torch.qint32:
        shifted = input * inv + zero_point  # float32: the product rounded, then the sum
    else:
        shifted = (input.double() * inv.double() + zero_point).float()  # one rounding, as a fused multiply-add
    return torch.round(shifted).double().clamp(qmin, qmax).to(int_dtype)  # 2**31 - 1 is no float32


def dequantize_per_tensor(input: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    return (input.long() - zero_point).float() * torch.tensor(scale, dtype=torch.float32)


def quantize_per_channel(input: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor, axis: int,
                         dtype: torch.dtype) -> torch.Tensor:
    qmin, qmax, int_dtype = check_per_channel_args(input, scales, zero_points, axis, dtype)
    shape = [1] * input.dim()
    shape[axis] = -1
    inv = 1.0 / scales.float().reshape(shape)
    return torch.round(input * inv + zero_points.reshape(shape)).double().clamp(qmin, qmax).to(int_dtype)


def dequantize_per_channel(input: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor,
                           axis: int) -> torch.Tensor:
    shape = [1] * input.dim()
    shape[axis] = -1
    return ((input.float() - zero_points.reshape(shape)).double() * scales.double().reshape(shape)).float()
