"""Rank r sends chunk (r + step) % n instead of (r - step) % n."""
from __future__ import annotations

from torch.distributed import ReduceOp

from minikernel.distributed.ops import Op, combine_
from minikernel.distributed.simulate import Buffers, Send

EXERCISE = "7.1"


def scatter_reduce_step(buffers: Buffers, step: int, op: Op = ReduceOp.SUM) -> list[Send]:
    n = len(buffers)
    # every rank sends at the same moment: copy all outgoing chunks before any changes
    sends = [Send(r, (r + 1) % n, (r + step) % n, buffers[r][(r + step) % n].clone()) for r in range(n)]
    for s in sends:
        combine_(buffers[s.dst][s.chunk], s.values, op)
    return sends
