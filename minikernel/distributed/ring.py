"""Chapter 07 across processes: a ring allreduce over ``torch.distributed``.

``ring_allreduce(tensor, op, group)`` is a drop-in for ``dist.all_reduce(tensor,
op, group)``: in place, same result on every rank. It does the careful parts
itself — agree on (length, dtype, op) with every rank first, work on a flat
contiguous copy when the input is strided, divide once for AVG, write back — and
leaves the ring to you (exercise 7.3): the same two phases as the simulated ring
of 7.1/7.2, but now each rank is a process that only knows its own chunks and
talks to its neighbours through ``Ring.exchange``.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch.distributed import ReduceOp

from ..course.exercise import exercise
from .ops import Op, check_dtype, check_op, combine_, transport_op  # noqa: F401 - combine_ is for your exercise
from .transport import ProcessGroup, Ring, check_agreement


@exercise("7.3")
def ring_allreduce_chunks(chunks: list[torch.Tensor], op: Op, ring: Ring) -> None:
    """Allreduce this rank's ``chunks`` in place, around the ring (one process per rank).

    ``chunks`` is this rank's flat buffer cut into ``N = ring.world_size`` contiguous
    chunks (``tensor_split``: sizes may differ by one, some may be empty). Rank
    ``r = ring.rank`` runs the same schedule as exercises 7.1 and 7.2:

    * scatter-reduce, for ``step`` in ``range(N - 1)``: send chunk ``(r - step) % N``
      and receive chunk ``(r - step - 1) % N`` at the same time with
      ``ring.exchange(send, recv)``, receiving into a scratch tensor, then fold it
      in: ``combine_(chunks[i], scratch, op)``;
    * allgather, for ``step`` in ``range(N - 1)``: send chunk ``(r + 1 - step) % N``
      and receive chunk ``(r - step) % N`` straight into place.

    ``ring.exchange`` posts ``dist.isend`` to the next rank and ``dist.irecv`` from
    the previous one, and waits for both with the group's timeout. ``op`` is SUM,
    MAX or MIN here (``ring_allreduce`` turns AVG into SUM and divides afterwards).

    Matches: ``dist.all_reduce(torch.cat(chunks), op)`` — every rank ends with the
    same reduced chunks (exactly for integers, allclose for floats).
    """
    # TODO(7.3): ≈12 lines
    raise NotImplementedError("exercise 7.3 (ring_allreduce_chunks) is not implemented yet")


def flat_work(tensor: torch.Tensor) -> torch.Tensor:
    """A flat contiguous tensor to reduce in place: a view of ``tensor`` when it is
    contiguous (so the result lands in it), else a copy to write back afterwards."""
    return tensor.view(-1) if tensor.is_contiguous() else tensor.reshape(-1).clone()


def finish_(tensor: torch.Tensor, work: torch.Tensor, op: Op, world_size: int) -> None:
    """AVG divides once; a strided input gets the result written back into its own elements."""
    if op == ReduceOp.AVG:
        work.div_(world_size)
    if work.data_ptr() != tensor.data_ptr() or not tensor.is_contiguous():
        tensor.copy_(work.view(tensor.shape))


def ring_allreduce(tensor: torch.Tensor, op: Op = ReduceOp.SUM, group: Optional[ProcessGroup] = None) -> None:
    """Reduce ``tensor`` across every rank of ``group`` with a ring, in place.

    Every rank calls it with a tensor of the same length and dtype; afterwards
    every rank's tensor holds the reduction (SUM, AVG, MAX or MIN) of all of them.
    Works for any world size (1 included), any length (fewer elements than ranks
    too), integer and floating-point dtypes, and strided (non-contiguous) tensors.

    Before any data moves, the ranks exchange (length, dtype, op); a disagreement
    raises ``MismatchError`` on every rank. Every wait uses the group's timeout (the
    one given to ``init_process_group``), so a lost rank raises ``CollectiveError``.

    Args:
        tensor (Tensor): input and output, like ``dist.all_reduce``'s.
        op (ReduceOp, optional): ``ReduceOp.SUM``, ``AVG``, ``MAX`` or ``MIN``. Default: ``ReduceOp.SUM``
        group (ProcessGroup, optional): the ranks taking part. Default: ``None`` (the whole world)

    Matches: ``dist.all_reduce(tensor, op, group)``.

    Example (inside each rank, e.g. under ``run_ranks`` or ``torchrun``)::

        >>> t = torch.arange(4) + 4 * dist.get_rank()
        >>> ring_allreduce(t)     # world 4: every rank now holds tensor([24, 28, 32, 36])
    """
    check_op(op)
    ring = Ring.of(group, "ring_allreduce")
    check_agreement(tensor, op, ring)  # before any data moves, on every rank
    check_dtype(tensor.dtype, op, "ring_allreduce")  # every rank has the same dtype and op now
    work = flat_work(tensor)
    ring_allreduce_chunks(list(work.tensor_split(ring.world_size)), transport_op(op), ring)
    finish_(tensor, work, op, ring.world_size)
