"""Exercise 10.4 at the rounding boundaries: inputs half a step apart from a level, and their float32
neighbours, for scales that float32 cannot hold exactly, where the last bit of the reciprocal and
of the product decides the level.

Oracle: ``torch.quantize_per_tensor(x, scale, zero_point, dtype).int_repr()``, bit for bit (before
torch 2.13, the docstring's float steps: tests/ch10/torch_quantize.py).
"""
from __future__ import annotations

import pytest
import torch

from minikernel.ao.quantization import quantize as Q
from tests.ch10.torch_quantize import torch_quantize_per_tensor

SCALES = [0.1, 1 / 3, 0.0123456789, 0.7071067811865476, 2.0 / 7, 1e-3 / 3, 9.87654321, 0.05000000000000001]


def _boundaries(scale: float, zero_point: int, qmin: int, qmax: int) -> torch.Tensor:
    """``(k + 0.5 - zero_point) * scale`` for every level k, rounded to float32, with both neighbours."""
    k = torch.arange(qmin - 2, qmax + 2, dtype=torch.float64) if qmax - qmin < 1000 else \
        torch.arange(-600, 600, dtype=torch.float64)
    mid = ((k + 0.5 - zero_point) * scale).float()
    return torch.cat([mid, torch.nextafter(mid, torch.tensor(float("inf"))),
                      torch.nextafter(mid, torch.tensor(float("-inf")))])


@pytest.mark.exercise("10.4")
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("dtype,zero_point", [(torch.quint8, 0), (torch.quint8, 128), (torch.qint8, 0),
                                              (torch.qint8, -5), (torch.qint32, 0), (torch.qint32, 17)])
def test_levels_at_the_rounding_boundaries_are_torchs(scale, dtype, zero_point):
    """The reciprocal is that of the scale rounded to float32 (``1.0 / torch.tensor(scale,
    dtype=torch.float32)``), not the float32 rounding of ``1.0 / scale``: near a half step the two
    give different levels."""
    qmin, qmax, _ = Q.QRANGES[dtype]
    x = _boundaries(scale, zero_point, qmin, qmax)
    expected = torch_quantize_per_tensor(x, scale, zero_point, dtype).int_repr()
    got = Q.quantize_per_tensor(x, scale, zero_point, dtype)
    assert got.dtype == expected.dtype
    bad = (got != expected).nonzero().flatten()
    assert bad.numel() == 0, (
        f"scale {scale!r}: {bad.numel()} of {x.numel()} levels differ from torch's, first at x={x[bad[0]].item()!r}: "
        f"yours {got[bad[0]].item()}, torch's {expected[bad[0]].item()}")
