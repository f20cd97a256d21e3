r"""Affine quantization: float ↔ 8-bit (or 32-bit) integers with a scale and a zero point.

A float range ``[lo, hi]`` is mapped onto the integers ``[qmin, qmax]`` of the
quantized type by a line: ``x ≈ scale · (q − zero_point)``. So

.. math::  q = \mathrm{clamp}(\mathrm{round}(x / \mathrm{scale}) + \mathrm{zero\_point},\ q_{min},\ q_{max})
           \qquad \hat x = \mathrm{scale} \cdot (q - \mathrm{zero\_point})

``zero_point`` is the integer that stands for 0.0 exactly (zero padding, ReLU outputs
lose nothing); rounding costs at most ``scale/2`` inside the range, clamping
saturates outside it. ``scale = (hi − lo) / (qmax − qmin)`` and
``zero_point = qmin − round(lo / scale)`` make the range fit (what a MinMax observer
computes).

Bit-identical results need PyTorch's exact float steps (x86, 2.13, measured): the
reciprocal ``1 / scale`` in float32, then ``x * inv + zero_point``. For quint8/qint8
per tensor (the vectorized kernel) that is one fused multiply-add — exact product
and sum, rounded once to float32; for qint32 per tensor and for every per-channel
case it is a float32 product, rounded, then a float32 sum, rounded. Then round half
to even, clamp. The rare values that come out one level apart are those a hair
from a half-way point.

These functions take and return torch tensors: the integer representation that
``q.int_repr()`` shows for torch's quantized tensor ``q``.
"""
from __future__ import annotations

import torch

from minikernel.course.exercise import exercise

#: The quantized dtypes: (smallest value, largest value, integer dtype of the representation).
QRANGES: dict[torch.dtype, tuple[int, int, torch.dtype]] = {
    torch.quint8: (0, 255, torch.uint8),
    torch.qint8: (-128, 127, torch.int8),
    torch.qint32: (-2**31, 2**31 - 1, torch.int32),
}


def check_quantize_args(input: torch.Tensor, zero_points: torch.Tensor | int, dtype: torch.dtype) -> tuple[int, int, torch.dtype]:
    """Refuse what torch refuses; return ``(qmin, qmax, integer dtype)`` of ``dtype``.

    Raises:
        RuntimeError: ``input`` is not float32 (torch: "Quantize only works on Float
            Tensor, got Double"), ``dtype`` is not a quantized type, or a zero point is
            outside ``[qmin, qmax]``.
    """
    if input.dtype != torch.float32:
        kind = {torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16", torch.int64: "Long",
                torch.int32: "Int"}.get(input.dtype, str(input.dtype))
        raise RuntimeError(f"Quantize only works on Float Tensor, got {kind}. Convert with input.float() first.")
    if dtype not in QRANGES:
        raise RuntimeError(f"{dtype} is not a quantized dtype: use torch.quint8, torch.qint8 or torch.qint32")
    qmin, qmax, int_dtype = QRANGES[dtype]
    zero_points = torch.as_tensor(zero_points)
    if zero_points.is_floating_point():
        raise RuntimeError("give integer zero points (torch also takes float zero points, a different scheme "
                           "that this module does not implement)")
    if zero_points.numel() and (zero_points.min() < qmin or zero_points.max() > qmax):
        raise RuntimeError(f"a zero point is outside [{qmin}, {qmax}], the range of {dtype}: "
                           f"got {zero_points.tolist()}")
    return qmin, qmax, int_dtype


def check_per_channel_args(input: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor, axis: int,
                           dtype: torch.dtype) -> tuple[int, int, torch.dtype]:
    """``check_quantize_args``, plus torch's checks of ``axis`` and of the lengths.

    Raises:
        RuntimeError: ``axis`` outside ``[0, input.dim())`` (negative axes too, as in
            torch), or ``scales``/``zero_points`` not one per channel.
    """
    if not 0 <= axis < input.dim():
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: {axis}"
                           f"Expected: [0, {input.dim()})")
    channels = input.shape[axis]
    for name, values in (("scales", scales), ("zero_points", zero_points)):
        if values.dim() != 1 or values.numel() != channels:
            raise RuntimeError(f"length of {name} must equal to channel, expected {channels} got, {values.numel()}")
    return check_quantize_args(input, zero_points, dtype)


@exercise("10.4")
def quantize_per_tensor(input: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    """Quantize every element of ``input`` with one ``scale`` and ``zero_point``.

    * ``qmin, qmax, int_dtype = check_quantize_args(input, zero_point, dtype)`` first.
    * The reciprocal in float32: ``inv = 1.0 / torch.tensor(scale, dtype=torch.float32)``.
    * ``input * inv + zero_point``: for ``torch.quint8`` and ``torch.qint8`` as one fused
      multiply-add — exact product and sum, rounded once to float32 (emulate it in
      float64, where the product of two float32 is exact, then ``.float()``); for
      ``torch.qint32`` in plain float32 arithmetic (product rounded, then sum rounded).
    * Round half to even (``torch.round``), clamp to ``[qmin, qmax]`` in float64 (qint32's
      ``2**31 - 1`` is not a float32), convert to ``int_dtype``.

    Matches: ``torch.quantize_per_tensor(input, scale, zero_point, dtype).int_repr()``,
    bit for bit. ≈7 lines.
    """
    # TODO(10.4): ≈7 lines
    raise NotImplementedError("exercise 10.4 (quantize_per_tensor) is not implemented yet")


@exercise("10.4")
def dequantize_per_tensor(input: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    """Back to float32: ``(q − zero_point) · scale``, where ``input`` holds the integers ``q``.

    Subtract in int64 (no overflow), then multiply in float32 by ``scale`` as float32.

    Matches: ``q.dequantize()`` for ``q = torch.quantize_per_tensor(x, scale, zero_point,
    dtype)`` and ``input = q.int_repr()``, bit for bit. ≈2 lines.
    """
    # TODO(10.4): ≈2 lines
    raise NotImplementedError("exercise 10.4 (dequantize_per_tensor) is not implemented yet")


@exercise("10.5")
def quantize_per_channel(input: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor, axis: int,
                         dtype: torch.dtype) -> torch.Tensor:
    """Quantize with one ``(scale, zero_point)`` per index along ``axis`` (per output channel of a weight).

    * ``qmin, qmax, int_dtype = check_per_channel_args(input, scales, zero_points, axis, dtype)``.
    * Reshape ``scales`` and ``zero_points`` to broadcast along ``axis`` (size
      ``input.shape[axis]`` there, 1 elsewhere).
    * Float32 reciprocal of each scale (``1.0 / scales.float()``), then
      ``input * inv + zero_points`` in plain float32 arithmetic (no fused multiply-add
      here, for every dtype), round half to even, clamp (in float64), convert.

    Why per channel: the rows of a weight matrix differ in range by orders of
    magnitude; one scale for all would leave the small rows a handful of levels.

    Matches: ``torch.quantize_per_channel(input, scales, zero_points, axis, dtype).int_repr()``,
    bit for bit. ≈6 lines.
    """
    # TODO(10.5): ≈6 lines
    raise NotImplementedError("exercise 10.5 (quantize_per_channel) is not implemented yet")


@exercise("10.5")
def dequantize_per_channel(input: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor,
                           axis: int) -> torch.Tensor:
    """Back to float32 per channel: ``(q − zero_point[c]) · scale[c]`` along ``axis``.

    torch converts ``q`` to float32 first and subtracts the zero points in float32 (exact
    for 8-bit values; a qint32 value beyond ``2**24`` is rounded there, as in torch), then
    keeps per-channel scales in float64 and multiplies in float64, rounding to float32 at
    the end (unlike the per-tensor case): ``input.float() - zero_points``, ``.double()``,
    multiply by ``scales`` as float64, then ``.float()``.

    Matches: ``q.dequantize()`` for ``q = torch.quantize_per_channel(...)``, bit for bit. ≈4 lines.
    """
    # TODO(10.5): ≈4 lines
    raise NotImplementedError("exercise 10.5 (dequantize_per_channel) is not implemented yet")
