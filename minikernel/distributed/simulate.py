"""Chapter 07, in one process: a ring of simulated ranks that records every step.

``N`` ranks each hold a buffer, cut into ``N`` chunks. A **ring allreduce** runs in
two phases of ``N - 1`` steps each. In every step every rank sends one chunk to
the next rank and receives one chunk from the previous rank, all at the same time:

* **scatter-reduce** (exercise 7.1): the received chunk is *combined* into the
  rank's own copy (added, for SUM). After ``N - 1`` steps each rank owns one
  chunk that holds the contributions of all ranks: rank ``r`` owns chunk ``(r + 1) % N``.
* **allgather** (exercise 7.2): the finished chunks travel once more round the
  ring, and each received chunk *overwrites* the stale copy.

``SimulatedRing`` runs your two step functions and keeps the record: what each rank
sent to whom, the buffers after each step, and per rank the values sent and
received, the additions and the overwrites. ``simulate_naive`` does the same
count for the naive method (one rank gathers, reduces and sends back).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Sequence, Union

import torch
from torch.distributed import ReduceOp

from ..course.exercise import exercise
from .ops import Op, check_dtype, check_op, combine_, op_name, transport_op

Chunks = list[torch.Tensor]   #: one rank's buffer cut into world_size chunks (views into it)
Buffers = list[Chunks]        #: buffers[rank][chunk]
Data = Union[Sequence[Sequence[float]], Sequence[torch.Tensor], torch.Tensor]  #: one row per rank

#: the example of the original notes: 4 machines holding 1..4, 5..8, 9..12, 13..16
NOTES_EXAMPLE: list[list[int]] = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]


class Send(NamedTuple):
    """One message of a step: rank ``src`` sent its chunk number ``chunk`` to rank ``dst``."""

    src: int
    dst: int
    chunk: int
    values: torch.Tensor  #: a copy of what was sent (the chunk as it was before the step)


@exercise("7.1")
def scatter_reduce_step(buffers: Buffers, step: int, op: Op = ReduceOp.SUM) -> list[Send]:
    """Step ``step`` (0-based) of the scatter-reduce, for all ranks at once, in place.

    With ``N = len(buffers)``, every rank ``r`` sends its chunk ``(r - step) % N``
    to rank ``(r + 1) % N``. The receiver folds it into its own copy of that chunk
    with ``combine_(mine, incoming, op)`` (an add for SUM). All sends of a step
    happen at the same moment, so take every outgoing chunk (``.clone()``) before
    changing any.

    After steps 0 .. N-2, rank ``r``'s chunk ``(r + 1) % N`` is the reduction of
    that chunk over all ranks:
    ``torch.stack([b[c] for b in original]).sum(0)`` for SUM, ``.amax(0)`` for MAX.

    Returns the step's messages in rank order: ``[Send(src, dst, chunk, values), ...]``.

    Matches: ``dist.all_reduce``'s result, chunk by chunk, once the allgather has run.
    """
    # TODO(7.1): ≈5 lines
    raise NotImplementedError("exercise 7.1 (scatter_reduce_step) is not implemented yet")


@exercise("7.2")
def allgather_step(buffers: Buffers, step: int) -> list[Send]:
    """Step ``step`` (0-based) of the allgather, for all ranks at once, in place.

    After the scatter-reduce, rank ``r`` owns the finished chunk ``(r + 1) % N``.
    In step ``step`` every rank ``r`` sends its chunk ``(r + 1 - step) % N`` to rank
    ``(r + 1) % N``, which *overwrites* its own copy with it (``mine.copy_(incoming)``).
    As in 7.1, every rank sends what it held before the step, and each message holds a
    copy (``.clone()``): later changes to the buffers leave the messages as they were.

    After steps 0 .. N-2 every rank holds every finished chunk.

    Returns the step's messages in rank order: ``[Send(src, dst, chunk, values), ...]``.

    Matches: ``dist.all_reduce(t)`` — every rank ends with the same, fully reduced buffer.
    """
    # TODO(7.2): ≈5 lines
    raise NotImplementedError("exercise 7.2 (allgather_step) is not implemented yet")


@dataclass
class Counters:
    """What one rank did, counted in values (elements), as the notes count them."""

    sent: int = 0        #: values sent
    received: int = 0    #: values received
    additions: int = 0   #: values folded in with the op (additions for SUM/AVG)
    overwrites: int = 0  #: values replaced by a received one


@dataclass
class StepRecord:
    """One step of the ring: the buffers before and after, and the messages."""

    phase: str          #: "scatter-reduce" or "allgather"
    step: int           #: 0-based within the phase
    sends: list[Send]
    before: list[torch.Tensor]  #: every rank's buffer before the step (copies)
    after: list[torch.Tensor]   #: every rank's buffer after the step (copies)


def _rows(data: Data) -> list[torch.Tensor]:
    """One flat 1-D tensor per rank (copies), checked for equal length and dtype."""
    if isinstance(data, torch.Tensor):
        if data.dim() != 2:
            raise ValueError(f"give one row per rank: a 2-D tensor (ranks x elements), not shape {tuple(data.shape)}")
        rows = [r.clone() for r in data]
    else:
        rows = [r.reshape(-1).clone() if isinstance(r, torch.Tensor) else torch.tensor(r) for r in data]
    if not rows:
        raise ValueError("a ring needs at least one rank; got no rows")
    for r, row in enumerate(rows):
        if row.dim() != 1:
            raise ValueError(f"rank {r}'s data must be a flat list of numbers, got shape {tuple(row.shape)}")
        if row.numel() != rows[0].numel() or row.dtype != rows[0].dtype:
            raise ValueError(f"every rank must hold as many values of one dtype: rank 0 has {rows[0].numel()} "
                             f"of {rows[0].dtype}, rank {r} has {row.numel()} of {row.dtype}")
    return rows


def _check_sends(sends, phase: str, exercise_id: str, world_size: int) -> list[Send]:
    if not isinstance(sends, (list, tuple)) or not all(isinstance(s, tuple) and len(s) == 4 for s in sends):
        raise TypeError(f"the {phase} step must return its messages as a list of Send(src, dst, chunk, values) "
                        f"(exercise {exercise_id}); got {type(sends).__name__}")
    sends = [Send(*s) for s in sends]
    for s in sends:
        if not all(0 <= i < world_size for i in (s.src, s.dst, s.chunk)):
            raise ValueError(f"{s[:3]} names a rank or chunk outside 0..{world_size - 1} (exercise {exercise_id})")
    return sends


class SimulatedRing:
    """A ring allreduce over in-process ranks, one recorded step at a time.

    Args:
        data: one row of numbers per rank (lists, 1-D tensors, or a 2-D tensor).
            Each row is cut into ``world_size`` chunks with ``tensor_split``, so the
            first ``len % world_size`` chunks are one element longer, and some chunks
            are empty when there are fewer elements than ranks.
        op (ReduceOp, optional): SUM, AVG, MAX or MIN. AVG sums on the way and
            divides once at the end. Default: ``ReduceOp.SUM``

    Example::

        >>> ring = SimulatedRing(NOTES_EXAMPLE)
        >>> ring.run()[0].tolist()
        [28, 32, 36, 40]
        >>> ring.counters[0]
        Counters(sent=6, received=6, additions=3, overwrites=3)
    """

    def __init__(self, data: Data, op: Op = ReduceOp.SUM):
        check_op(op)
        self.op = op
        self.buffers = _rows(data)
        check_dtype(self.buffers[0].dtype, op, "SimulatedRing")
        self.world_size = len(self.buffers)
        self.chunks: Buffers = [list(b.tensor_split(self.world_size)) for b in self.buffers]
        self.history: list[StepRecord] = []
        self.counters = [Counters() for _ in range(self.world_size)]

    @property
    def total_steps(self) -> int:
        """``2 (N - 1)``: N - 1 scatter-reduce steps, then N - 1 allgather steps."""
        return 2 * (self.world_size - 1)

    @property
    def done(self) -> bool:
        return len(self.history) == self.total_steps

    def next_step(self) -> tuple[str, int]:
        """(phase, step within the phase) of the step ``step()`` would run next."""
        k = len(self.history)
        if k >= self.total_steps:
            raise RuntimeError(f"the ring is done: all {self.total_steps} steps have run")
        half = self.world_size - 1
        return ("scatter-reduce", k) if k < half else ("allgather", k - half)

    def step(self) -> StepRecord:
        """Run the next step with your ``scatter_reduce_step`` / ``allgather_step``; record it."""
        phase, step = self.next_step()
        before = [b.clone() for b in self.buffers]
        if phase == "scatter-reduce":
            sends = _check_sends(scatter_reduce_step(self.chunks, step, transport_op(self.op)), phase, "7.1",
                                 self.world_size)
        else:
            sends = _check_sends(allgather_step(self.chunks, step), phase, "7.2", self.world_size)
        for s in sends:
            n = s.values.numel()
            self.counters[s.src].sent += n
            self.counters[s.dst].received += n
            if phase == "scatter-reduce":
                self.counters[s.dst].additions += n
            else:
                self.counters[s.dst].overwrites += n
        if self.op == ReduceOp.AVG and len(self.history) + 1 == self.total_steps:
            for b in self.buffers:
                b.div_(self.world_size)  # AVG: divide once, at the very end
        record = StepRecord(phase, step, sends, before, [b.clone() for b in self.buffers])
        self.history.append(record)
        return record

    def run(self) -> list[torch.Tensor]:
        """Run every remaining step; return every rank's buffer (all equal when correct)."""
        while not self.done:
            self.step()
        return [b.clone() for b in self.buffers]

    def table(self, phase: str | None = None) -> str:
        """The steps so far, one line per rank, in the notation of the original notes::

            rank 0: [1, 2, 3, 4]  (-> 1) (<- 16) (add)  => [1, 2, 3, 20]

        ``(-> x)`` is what the rank sends to the next rank, ``(<- y)`` what it
        receives from the previous one, then ``add`` (scatter-reduce) or
        ``overwrite`` (allgather), and the buffer after the step.
        """
        lines = []
        for record in self.history:
            if phase is not None and record.phase != phase:
                continue
            lines.append(f"{record.phase} step {record.step + 1}")
            verb = "add" if record.phase == "scatter-reduce" else "overwrite"
            out = {s.src: s for s in record.sends}
            into = {s.dst: s for s in record.sends}
            for r in range(self.world_size):
                sent = f"(-> {_show(out[r].values)}) " if r in out else ""
                got = f"(<- {_show(into[r].values)}) ({verb})" if r in into else "(nothing)"
                lines.append(f"rank {r}: {_show(record.before[r])}  {sent}{got}  => {_show(record.after[r])}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"SimulatedRing(world_size={self.world_size}, op=ReduceOp.{op_name(self.op)}, "
                f"steps run={len(self.history)}/{self.total_steps})")


def _show(t: torch.Tensor) -> str:
    """A chunk of one value prints as the value (as in the notes), longer ones as a list."""
    values = t.tolist()
    return str(values[0]) if isinstance(values, list) and len(values) == 1 else str(values)


@dataclass
class NaiveResult:
    """What ``simulate_naive`` returns: the buffers after, and the per-rank counts."""

    buffers: list[torch.Tensor]
    counters: list[Counters] = field(default_factory=list)


def simulate_naive(data: Data, op: Op = ReduceOp.SUM, root: int = 0) -> NaiveResult:
    """The naive allreduce, counted: ``root`` receives every other rank's whole buffer,
    folds each into its own, then sends the result back to each rank.

    With N ranks of S values each, the root receives and sends ``(N - 1) * S``
    values and does ``(N - 1) * S`` additions; every other rank sends and receives S.

    Example::

        >>> [c.received for c in simulate_naive(NOTES_EXAMPLE).counters]
        [12, 4, 4, 4]
    """
    check_op(op)
    rows = _rows(data)
    check_dtype(rows[0].dtype, op, "simulate_naive")
    n = len(rows)
    if not 0 <= root < n:
        raise ValueError(f"root must be a rank in 0..{n - 1}, got {root}")
    counters = [Counters() for _ in range(n)]
    total = rows[root].clone()
    for r in range(n):
        if r != root:  # gather: one whole buffer at a time
            counters[r].sent += rows[r].numel()
            counters[root].received += rows[r].numel()
            combine_(total, rows[r], transport_op(op))
            counters[root].additions += rows[r].numel()
    if op == ReduceOp.AVG:
        total.div_(n)
    for r in range(n):
        if r != root:  # broadcast the result back
            counters[root].sent += total.numel()
            counters[r].received += total.numel()
            counters[r].overwrites += total.numel()
    return NaiveResult([total.clone() for _ in range(n)], counters)
