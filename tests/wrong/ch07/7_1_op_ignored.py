"""Every received chunk is added, whatever ``op`` says: MAX and MIN come out as sums."""
from __future__ import annotations

from torch.distributed import ReduceOp

from minikernel.distributed.simulate import Send

EXERCISE = "7.1"


def scatter_reduce_step(buffers, step, op=ReduceOp.SUM):
    n = len(buffers)
    sends = [Send(r, (r + 1) % n, (r - step) % n, buffers[r][(r - step) % n].clone()) for r in range(n)]
    for s in sends:
        buffers[s.dst][s.chunk].add_(s.values)
    return sends
