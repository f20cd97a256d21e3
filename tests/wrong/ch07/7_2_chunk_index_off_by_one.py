"""Rank r forwards chunk (r - step) % n instead of (r + 1 - step) % n."""
from __future__ import annotations

from minikernel.distributed.simulate import Buffers, Send

EXERCISE = "7.2"


def allgather_step(buffers: Buffers, step: int) -> list[Send]:
    n = len(buffers)
    sends = [Send(r, (r + 1) % n, (r - step) % n, buffers[r][(r - step) % n].clone()) for r in range(n)]
    for s in sends:
        buffers[s.dst][s.chunk].copy_(s.values)
    return sends
