"""The least squares run in float32 (``torch.tensor(nbytes)``): sizes of megabytes lose the latency."""
from __future__ import annotations

import torch

EXERCISE = "7.4"


def fit_alpha_beta(nbytes, seconds):
    if len(nbytes) != len(seconds):
        raise ValueError(f"got {len(nbytes)} sizes but {len(seconds)} times; give one time per size")
    if len(set(float(v) for v in nbytes)) < 2:
        raise ValueError("need at least two different message sizes to separate latency from bandwidth")
    x, t = torch.tensor([float(v) for v in nbytes]), torch.tensor([float(v) for v in seconds])
    xm, tm = x.mean(), t.mean()
    beta = ((x - xm) * (t - tm)).sum() / ((x - xm) ** 2).sum()
    return float(tm - beta * xm), float(beta)
