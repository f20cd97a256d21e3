"""The naive cost's time forgets that data goes to rank 0 and back (factor 2)."""
from __future__ import annotations

from minikernel.distributed.cost import Cost

EXERCISE = "7.4"


def _check(world_size: int, nbytes: float) -> None:
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be non-negative, got {nbytes}")


def naive_cost(world_size: int, nbytes: float, alpha: float, beta: float) -> Cost:
    _check(world_size, nbytes)
    others = world_size - 1
    return Cost(others, others * nbytes, others * (alpha + nbytes * beta))
