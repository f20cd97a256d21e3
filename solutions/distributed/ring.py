"""Reference solution for exercise 7.3 (``minikernel/distributed/ring.py``).

The plain version — one ``ring.exchange`` per step, then ``combine_`` — passes the
tests. This one also overlaps the additions with the transfers. Each chunk is cut
into pieces of at most 2 MiB (``minikernel.distributed.pieces``), and the ring
becomes a stream of pieces:

* scatter-reduce: a rank sends its own chunk's pieces, then every piece the moment
  it has been added. Two scratch pieces take turns (double buffering): while piece
  ``i`` is being added, piece ``i + 1`` is already arriving in the other one. The
  last step's pieces complete this rank's chunk: they leave at once too, as the
  allgather's first step;
* allgather: nothing to compute; every piece is received straight into place and
  forwarded as soon as it has arrived.

Chapter 07's cost model (``pipelined_ring_cost``): ``2 (N - 1) (P alpha + S / N beta)
+ gamma S / (N P)`` for ``P`` pieces per chunk, against ``2 (N - 1) (alpha + S / N
beta) + (N - 1) gamma S / N`` unpipelined; near its optimum the curve is flat.
Measured on 2 cores, 4 ranks, 16M float32 (there transfers and additions compete for
the same cores, so hiding one behind the other gains little): on an otherwise quiet
machine 2 to 8 MiB pieces were level with each other and with whole chunks, and 1 MiB
pieces cost more in per-message overhead than they hid; with other processes keeping
the cores busy, 2 MiB held up best (4 and 8 MiB fell further behind gloo's own
ring). 2 MiB it is.

The sends go out in exactly the order the next rank receives them (gloo matches
the messages between two ranks in order), and nothing is received into a buffer a
send may still be reading: the scratch pieces are never sent, and the
scatter-reduce's sends finish before the allgather overwrites the chunks they read
(the finished chunk, which the allgather only sends, may still be on its way).
Additions work in place (``combine_`` into the chunk's own slice), and the scratch
is two pieces, not a chunk: no copies besides the transport's own.
"""
from __future__ import annotations

import torch

from minikernel.distributed.ops import Op, combine_
from minikernel.distributed.pieces import pieces
from minikernel.distributed.transport import Pending, Ring

WINDOW = 2  #: scratch pieces: receives posted ahead of the piece being added, plus that one


def _scatter_reduce(parts: list[list[torch.Tensor]], op: Op, ring: Ring) -> Pending:
    """N - 1 steps; returns the allgather's first sends (this rank's finished chunk), still in flight."""
    n, r = ring.world_size, ring.rank
    arriving = [p for step in range(n - 1) for p in parts[(r - step - 1) % n]]  # in the order they come
    kept = len(parts[(r + 1) % n])  # the last step's pieces: this rank's finished chunk, not forwarded
    largest = max((p.numel() for p in arriving), default=0)
    scratch = [arriving[0].new_empty(largest) for _ in range(WINDOW)] if arriving else []

    def receive(i: int) -> Pending:
        if i >= len(arriving):
            return Pending(ring)  # nothing left to receive
        return ring.start_recv(scratch[i % WINDOW][:arriving[i].numel()], ring.prev)

    posted = [receive(i) for i in range(WINDOW - 1)]  # first: the previous rank's sends find them waiting
    sends, finished = Pending(ring), Pending(ring)
    for piece in parts[r]:  # step 0 sends this rank's own chunk: all of it is ready
        sends += ring.start_send(piece, ring.next)
    for i, target in enumerate(arriving):
        posted.append(receive(i + WINDOW - 1))  # into the scratch piece freed by the last addition
        posted.pop(0).wait()
        combine_(target, scratch[i % WINDOW][:target.numel()], op)  # while the next pieces arrive
        if i < len(arriving) - kept:
            sends += ring.start_send(target, ring.next)  # exactly what the next step sends
        else:
            finished += ring.start_send(target, ring.next)  # fully reduced: the allgather's first step
    sends.wait()  # the allgather will overwrite chunks these sends read
    return finished


def _allgather(parts: list[list[torch.Tensor]], ring: Ring, sends: Pending) -> None:
    """N - 1 steps of overwrites; ``sends``: the finished chunk's pieces, already on their way."""
    n, r = ring.world_size, ring.rank
    arriving = [p for step in range(n - 1) for p in parts[(r - step) % n]]
    kept = len(parts[(r + 2) % n])  # the last step's pieces: no one left to forward them to
    posted = [ring.start_recv(p, ring.prev) for p in arriving]  # straight into place, all at once
    for i, (piece, incoming) in enumerate(zip(arriving, posted)):
        incoming.wait()
        if i < len(arriving) - kept:
            sends += ring.start_send(piece, ring.next)
    sends.wait()


def ring_allreduce_chunks(chunks: list[torch.Tensor], op: Op, ring: Ring) -> None:
    if ring.world_size == 1:
        return
    parts = [pieces(c) for c in chunks]
    _allgather(parts, ring, _scatter_reduce(parts, op, ring))
