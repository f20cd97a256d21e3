"""The messages hold views of the senders' buffers, not copies: what they record changes when the buffers do."""
from __future__ import annotations

from minikernel.distributed.simulate import Send

EXERCISE = "7.2"


def allgather_step(buffers, step):
    n = len(buffers)
    sends = [Send(r, (r + 1) % n, (r + 1 - step) % n, buffers[r][(r + 1 - step) % n]) for r in range(n)]
    for s in reversed(sends):
        buffers[s.dst][s.chunk].copy_(s.values)
    return sends
