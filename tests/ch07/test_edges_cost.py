"""Exercise 7.4 at its edges: a latency/bandwidth fit of sizes far from zero with a small spread.

Oracles: the exact line the times were made from (float64) and the docstring's
``torch.linalg.lstsq`` fit of the same points.
"""
from __future__ import annotations

import pytest
import torch

from minikernel.distributed import cost as C

ALPHA, BETA = 3e-5, 1e-9


@pytest.mark.exercise("7.4")
@pytest.mark.parametrize("base", [1e11, 2.0**40, 3e12])
def test_fit_alpha_beta_keeps_its_accuracy_far_from_zero(base):
    """Sizes of ``base + (0 .. 1 KiB)``: the centred sums (products of ``x_i - x̄`` and ``t_i - t̄``)
    lose nothing, where sums of the raw values cancel their leading digits."""
    x = torch.tensor([base + k for k in (0, 64, 128, 256, 1024)], dtype=torch.float64)
    t = ALPHA + BETA * x
    alpha, beta = C.fit_alpha_beta(x.tolist(), t.tolist())
    got = alpha + beta * x
    solution = torch.linalg.lstsq(torch.stack([torch.ones_like(x), x], 1), t[:, None]).solution.flatten()
    lstsq = solution[0] + solution[1] * x
    torch.testing.assert_close(lstsq, t, rtol=1e-12, atol=0)  # the oracles agree
    torch.testing.assert_close(got, t, rtol=1e-12, atol=0,
                               msg=lambda m: f"the fitted line misses the exact times of the points:\n{m}")
