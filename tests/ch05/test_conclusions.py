"""Chapter 05's printed conclusions about the variance PyTorch uses where, recomputed
from float64 sums written out here: ``torch.var``'s default correction, LayerNorm's
and BatchNorm's biased variance, BatchNorm's unbiased running variance."""
from __future__ import annotations

import math

import pytest
import torch


def _var(values, correction):
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - correction)


def test_var_and_std_default_to_bessels_correction():
    x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    t = torch.tensor(x, dtype=torch.float64)
    assert t.var().item() == pytest.approx(_var(x, 1), rel=1e-14)
    assert t.var(correction=0).item() == pytest.approx(_var(x, 0), rel=1e-14) == 4.0
    assert t.std().item() == pytest.approx(math.sqrt(_var(x, 1)), rel=1e-14)
    assert t.var(unbiased=False).item() == t.var(correction=0).item()


def test_layer_norm_uses_the_biased_variance():
    torch.manual_seed(0)
    x, w, b = torch.rand(3, 4, dtype=torch.float64), torch.rand(4, dtype=torch.float64), torch.rand(4,
                                                                                                  dtype=torch.float64)
    out = torch.nn.functional.layer_norm(x, (4,), w, b, eps=1e-5)
    for i, row in enumerate(x.tolist()):
        mean = math.fsum(row) / 4
        for j, v in enumerate(row):
            expected = (v - mean) / math.sqrt(_var(row, 0) + 1e-5) * w[j].item() + b[j].item()
            assert out[i, j].item() == pytest.approx(expected, rel=1e-12)


def test_batchnorm_normalizes_biased_and_tracks_unbiased():
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(3, momentum=1.0).double()
    xb = torch.randn(4, 3, 5, dtype=torch.float64)
    yb = bn(xb)
    for ch in range(3):
        values = xb[:, ch, :].flatten().tolist()
        assert bn.running_var[ch].item() == pytest.approx(_var(values, 1), rel=1e-12)
        mean = math.fsum(values) / len(values)
        assert yb[0, ch, 0].item() == pytest.approx((values[0] - mean) / math.sqrt(_var(values, 0) + 1e-5),
                                                    rel=1e-12)
