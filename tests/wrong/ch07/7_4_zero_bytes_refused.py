"""``nbytes == 0`` is refused (``nbytes <= 0``), though an empty buffer is a valid, free allreduce."""
from __future__ import annotations

from minikernel.distributed.cost import Cost

EXERCISE = "7.4"


def _check(world_size, nbytes):
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    if nbytes <= 0:
        raise ValueError(f"nbytes must be positive, got {nbytes}")


def ring_cost(world_size, nbytes, alpha, beta):
    _check(world_size, nbytes)
    steps, chunk = 2 * (world_size - 1), nbytes / world_size
    return Cost(steps, steps * chunk, steps * (alpha + chunk * beta))


def naive_cost(world_size, nbytes, alpha, beta):
    _check(world_size, nbytes)
    others = world_size - 1
    return Cost(others, others * nbytes, 2 * others * (alpha + nbytes * beta))
