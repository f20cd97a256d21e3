"""torch's quantized tensors as exercises 10.4 and 10.5 specify them, on every torch the course admits.

The docstrings give the float steps of torch 2.13 (x86): the reciprocal of the scale
rounded to float32, ``inv = 1 / float32(scale)``; then ``x * inv + zero_point``, for
quint8/qint8 per tensor as one fused multiply-add (rounded once to float32), for qint32
per tensor and every per-channel case a float32 product, rounded, then a float32 sum,
rounded; then round half to even and clamp to ``[qmin, qmax]``. torch 2.6 rounds ``x * inv``
first and adds the zero point after (0.5 with zero point 3 gives 3, where 2.13 rounds 3.5
to 4), and 2.11 and 2.12 differ from 2.13 too, so before 2.13 the levels are computed here in float64 by those steps:
the product of two float32 is exact in float64, and a float64 result rounded once to
float32 is the float32 operation's (53 >= 2 * 24 + 2 bits), and they are put into a
torch quantized tensor with the same scale and zero point, whose ``int_repr()`` and
``dequantize()`` the tests compare with (the dequantization is torch's own). From
2.13 on both functions return torch's.
"""
from __future__ import annotations

import torch

from tests.torch_versions import torch_before

#: smallest and largest level of each quantized dtype
_RANGES = {torch.quint8: (0, 255), torch.qint8: (-128, 127), torch.qint32: (-2**31, 2**31 - 1)}
_INT = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}


def _levels(shifted: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Round half to even, clamp in float64, convert: the integer representation."""
    qmin, qmax = _RANGES[dtype]
    return torch.round(shifted.double()).clamp(qmin, qmax).to(_INT[dtype])


def _reciprocal(scale: torch.Tensor) -> torch.Tensor:
    """1 / float32(scale), rounded to float32, as float64."""
    return (1.0 / scale.float().double()).float().double()


def torch_quantize_per_tensor(x: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    """``torch.quantize_per_tensor(x, scale, zero_point, dtype)``, with 2.13's levels."""
    if not torch_before("2.13"):
        return torch.quantize_per_tensor(x, scale, zero_point, dtype)
    product = x.double() * _reciprocal(torch.tensor(scale))
    if dtype == torch.qint32:
        shifted = (product.float().double() + zero_point).float()
    else:
        shifted = (product + zero_point).float()  # the fused multiply-add: rounded once
    return torch._make_per_tensor_quantized_tensor(_levels(shifted, dtype), scale, zero_point)


def torch_quantize_per_channel(x: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor, axis: int,
                               dtype: torch.dtype) -> torch.Tensor:
    """``torch.quantize_per_channel(x, scales, zero_points, axis, dtype)``, with 2.13's levels."""
    if not torch_before("2.13"):
        return torch.quantize_per_channel(x, scales, zero_points, axis, dtype)
    shape = [1] * x.dim()
    shape[axis] = -1
    product = (x.double() * _reciprocal(scales).reshape(shape)).float()
    shifted = (product.double() + zero_points.reshape(shape).double()).float()
    return torch._make_per_channel_quantized_tensor(_levels(shifted, dtype), scales.double(), zero_points, axis)
