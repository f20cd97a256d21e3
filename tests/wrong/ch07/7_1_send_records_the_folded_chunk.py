"""Each message records the receiver's chunk after folding, not the values that were sent."""
from __future__ import annotations

from torch.distributed import ReduceOp

from minikernel.distributed.ops import combine_
from minikernel.distributed.simulate import Send

EXERCISE = "7.1"


def scatter_reduce_step(buffers, step, op=ReduceOp.SUM):
    n = len(buffers)
    outgoing = [buffers[r][(r - step) % n].clone() for r in range(n)]
    sends = []
    for r in range(n):
        dst, chunk = (r + 1) % n, (r - step) % n
        combine_(buffers[dst][chunk], outgoing[r], op)
        sends.append(Send(r, dst, chunk, buffers[dst][chunk].clone()))
    return sends
