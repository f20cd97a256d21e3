"""The scatter-reduce receives straight into the chunk (assign) instead of folding it in."""
from __future__ import annotations

EXERCISE = "7.3"


def ring_allreduce_chunks(chunks, op, ring):
    n, r = ring.world_size, ring.rank
    for step in range(n - 1):
        ring.exchange(chunks[(r - step) % n], chunks[(r - step - 1) % n])
    for step in range(n - 1):
        ring.exchange(chunks[(r + 1 - step) % n], chunks[(r - step) % n])
