"""Chapter 05's sentences about ``correction``, checked against the installed torch.

Oracle: torch's own docstrings and a float64 computation of the sums of squares.
"""
from __future__ import annotations

import torch


def test_the_documented_signature_became_correction_in_2_0():
    for fn in (torch.var, torch.std, torch.var_mean, torch.std_mean):
        doc = fn.__doc__
        assert "correction" in doc and ".. versionchanged:: 2.0" in doc and "unbiased" in doc


def test_unbiased_still_means_correction_1_or_0_and_any_number_is_allowed():
    x = torch.tensor([[1.0, 2.0, 4.0, 8.0], [0.5, 0.0, 3.0, 1.0]], dtype=torch.float64)
    squares = ((x - x.mean(1, keepdim=True)) ** 2).sum(1)
    torch.testing.assert_close(torch.var(x, 1, unbiased=True), squares / 3)
    torch.testing.assert_close(torch.var(x, 1, unbiased=False), squares / 4)
    for correction in (-1, 0.5, 2):
        torch.testing.assert_close(torch.var(x, 1, correction=correction), squares / (4 - correction))
