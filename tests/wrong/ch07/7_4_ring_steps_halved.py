"""The ring's cost counts N - 1 steps (the scatter-reduce only) instead of 2(N - 1)."""
from __future__ import annotations

from minikernel.distributed.cost import Cost

EXERCISE = "7.4"


def _check(world_size: int, nbytes: float) -> None:
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be non-negative, got {nbytes}")


def ring_cost(world_size: int, nbytes: float, alpha: float, beta: float) -> Cost:
    _check(world_size, nbytes)
    steps, chunk = world_size - 1, nbytes / world_size
    return Cost(steps, steps * chunk, steps * (alpha + chunk * beta))
