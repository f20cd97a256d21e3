"""Exercises 10.4 and 10.5 on qint32 values far from 0: beyond ``2**24`` a float32 no longer holds
every integer, so where the zero point is subtracted (in int64 or after the conversion to float32)
changes the last bits of ``dequantize()``.

Oracle: torch's quantized tensors made from the same integers
(``torch._make_per_tensor_quantized_tensor`` / ``_make_per_channel_quantized_tensor``), bit for bit.
"""
from __future__ import annotations

import warnings

import pytest
import torch

from minikernel.ao.quantization import quantize as Q


def _large_qint32(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Integers up to ``2**30`` in magnitude: most need more than float32's 24 bits, none overflows
    an int32 once a small zero point is subtracted."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-2**30, 2**30, shape, generator=g).to(torch.int32)


@pytest.mark.exercise("10.4")
@pytest.mark.parametrize("scale", [0.5, 0.1, 3.7e-5])
@pytest.mark.parametrize("zero_point", [1, 7, -3, 12345])
def test_per_tensor_dequantize_of_large_qint32_values_is_torchs(scale, zero_point):
    """Subtract in int64, then convert: converting first rounds ``q`` to float32 before the subtraction."""
    q = _large_qint32((4096,), seed=zero_point)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch._make_per_tensor_quantized_tensor(q, scale, zero_point).dequantize()
    got = Q.dequantize_per_tensor(q, scale, zero_point)
    assert got.dtype == torch.float32
    bad = (got != expected).nonzero().flatten()
    assert bad.numel() == 0, (f"{bad.numel()} of {q.numel()} values differ from torch's, e.g. q={q[bad[0]].item()}: "
                              f"got {got[bad[0]].item()!r}, torch {expected[bad[0]].item()!r}")


@pytest.mark.exercise("10.5")
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_per_channel_dequantize_of_large_qint32_values_is_torchs(axis):
    """Per channel, torch converts ``q`` to float32 before subtracting the zero points (then scales
    in float64): subtracting in int64 first gives other last bits beyond ``2**24``."""
    q = _large_qint32((6, 5, 7), seed=axis)
    g = torch.Generator().manual_seed(10 + axis)
    n = q.shape[axis]
    scales = torch.rand(n, generator=g, dtype=torch.float64) * 0.1 + 1e-3
    zero_points = torch.randint(-100, 100, (n,), generator=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch._make_per_channel_quantized_tensor(q, scales, zero_points, axis).dequantize()
    got = Q.dequantize_per_channel(q, scales, zero_points, axis)
    assert got.dtype == torch.float32
    bad = (got != expected).nonzero()
    assert bad.shape[0] == 0, (f"{bad.shape[0]} of {q.numel()} values differ from torch's, e.g. at "
                               f"{tuple(bad[0].tolist())}: got {got[tuple(bad[0])].item()!r}, "
                               f"torch {expected[tuple(bad[0])].item()!r}")
