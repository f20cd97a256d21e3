"""Reference solutions for exercise 7.4 (``minikernel/distributed/cost.py``)."""
from __future__ import annotations

from typing import Sequence

from minikernel.distributed.cost import Cost


def _check(world_size: int, nbytes: float) -> None:
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be non-negative, got {nbytes}")


def ring_cost(world_size: int, nbytes: float, alpha: float, beta: float) -> Cost:
    _check(world_size, nbytes)
    steps, chunk = 2 * (world_size - 1), nbytes / world_size
    return Cost(steps, steps * chunk, steps * (alpha + chunk * beta))


def naive_cost(world_size: int, nbytes: float, alpha: float, beta: float) -> Cost:
    _check(world_size, nbytes)
    others = world_size - 1
    return Cost(others, others * nbytes, 2 * others * (alpha + nbytes * beta))


def fit_alpha_beta(nbytes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    x, t = [float(v) for v in nbytes], [float(v) for v in seconds]
    if len(x) != len(t):
        raise ValueError(f"got {len(x)} sizes but {len(t)} times; give one time per size")
    if len(set(x)) < 2:
        raise ValueError("need at least two different message sizes to separate latency from bandwidth")
    x_mean, t_mean = sum(x) / len(x), sum(t) / len(t)
    sxx = sum((xi - x_mean) ** 2 for xi in x)
    sxt = sum((xi - x_mean) * (ti - t_mean) for xi, ti in zip(x, t))
    beta = sxt / sxx
    return t_mean - beta * x_mean, beta
