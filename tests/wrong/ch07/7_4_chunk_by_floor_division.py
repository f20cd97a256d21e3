"""The chunk size is ``nbytes // world_size``: a buffer that does not divide evenly loses its remainder."""
from __future__ import annotations

from minikernel.distributed.cost import Cost

EXERCISE = "7.4"


def _check(world_size, nbytes):
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be non-negative, got {nbytes}")


def ring_cost(world_size, nbytes, alpha, beta):
    _check(world_size, nbytes)
    steps, chunk = 2 * (world_size - 1), nbytes // world_size
    return Cost(steps, steps * chunk, steps * (alpha + chunk * beta))
