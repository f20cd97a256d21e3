"""The fit checks for two *measurements*, not two distinct sizes: repeated sizes divide by zero."""
from __future__ import annotations

EXERCISE = "7.4"


def fit_alpha_beta(nbytes, seconds):
    x, t = [float(v) for v in nbytes], [float(v) for v in seconds]
    if len(x) != len(t):
        raise ValueError(f"got {len(x)} sizes but {len(t)} times; give one time per size")
    if len(x) < 2:
        raise ValueError("need at least two measurements")
    x_mean, t_mean = sum(x) / len(x), sum(t) / len(t)
    sxx = sum((xi - x_mean) ** 2 for xi in x)
    sxt = sum((xi - x_mean) * (ti - t_mean) for xi, ti in zip(x, t))
    beta = sxt / sxx
    return t_mean - beta * x_mean, beta
