"""The naive allreduce over ``torch.distributed``: gather everything on one rank,
reduce there, send the result back.

Complete code, not an exercise: the baseline the ring is measured against, and a
small example of point-to-point ``isend``/``irecv`` with timeouts. With N ranks and
S elements, the root receives ``(N - 1) S`` elements and sends ``(N - 1) S``; every
other rank sends and receives S. The ring moves ``2 (N - 1) / N · S`` per rank.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch.distributed import ReduceOp

from .ops import Op, check_dtype, check_op, combine_, transport_op
from .ring import finish_, flat_work
from .transport import ProcessGroup, Ring, check_agreement


def naive_allreduce(tensor: torch.Tensor, op: Op = ReduceOp.SUM, group: Optional[ProcessGroup] = None) -> None:
    """Reduce ``tensor`` across ``group`` through rank 0, in place.

    Rank 0 receives each other rank's whole tensor in turn, folds it in with the
    op, then sends the result to every rank. Same checks and timeouts as
    ``ring_allreduce``.

    Args:
        tensor (Tensor): input and output.
        op (ReduceOp, optional): ``SUM``, ``AVG``, ``MAX`` or ``MIN``. Default: ``ReduceOp.SUM``
        group (ProcessGroup, optional): the ranks taking part. Default: ``None`` (the whole world)

    Matches: ``dist.all_reduce(tensor, op, group)``.
    """
    check_op(op)
    ring = Ring.of(group, "naive_allreduce")
    check_agreement(tensor, op, ring)
    check_dtype(tensor.dtype, op, "naive_allreduce")
    work = flat_work(tensor)
    if ring.rank == 0:
        incoming = torch.empty_like(work)
        for peer in range(1, ring.world_size):  # one whole buffer at a time: the root's link is the bottleneck
            ring.start_recv(incoming, peer).wait()
            combine_(work, incoming, transport_op(op))
        if op == ReduceOp.AVG:
            work.div_(ring.world_size)
        pending = ring.start_send(work, 1) if ring.world_size > 1 else None
        for peer in range(2, ring.world_size):
            pending += ring.start_send(work, peer)
        if pending is not None:
            pending.wait()
    else:
        pending = ring.start_send(work, 0)
        pending.wait()
        ring.start_recv(work, 0).wait()
    finish_(tensor, work, ReduceOp.SUM, ring.world_size)  # AVG already divided on the root
