"""The least-squares slope from raw sums, (n Σxt - Σx Σt) / (n Σx² - (Σx)²): right on paper, but the sums cancel their leading digits for sizes far from zero."""
from __future__ import annotations

EXERCISE = "7.4"


def fit_alpha_beta(nbytes, seconds):
    x, t = [float(v) for v in nbytes], [float(v) for v in seconds]
    if len(x) != len(t):
        raise ValueError(f"got {len(x)} sizes but {len(t)} times; give one time per size")
    if len(set(x)) < 2:
        raise ValueError("need at least two different message sizes to separate latency from bandwidth")
    n = len(x)
    sx, st, sxx, sxt = sum(x), sum(t), sum(v * v for v in x), sum(a * b for a, b in zip(x, t))
    beta = (n * sxt - sx * st) / (n * sxx - sx * sx)
    return (st - beta * sx) / n, beta
