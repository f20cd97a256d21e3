"""The messages are returned ordered by receiver, not by sender (rank order)."""
from __future__ import annotations

from torch.distributed import ReduceOp

from minikernel.distributed.ops import combine_
from minikernel.distributed.simulate import Send

EXERCISE = "7.1"


def scatter_reduce_step(buffers, step, op=ReduceOp.SUM):
    n = len(buffers)
    sends = [Send(r, (r + 1) % n, (r - step) % n, buffers[r][(r - step) % n].clone()) for r in range(n)]
    for s in sends:
        combine_(buffers[s.dst][s.chunk], s.values, op)
    return sorted(sends, key=lambda s: s.dst)
