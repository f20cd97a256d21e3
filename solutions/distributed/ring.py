"""Reference solution for exercise 7.3 (``minikernel/distributed/ring.py``).

The plain version — one ``ring.exchange`` per step, then ``combine_`` — passes the
tests. This one also overlaps the additions with the transfers. Each chunk is cut
into pieces of at most 2 MiB (``minikernel.distributed.pieces``), and the ring
becomes a stream of pieces:

* scatter-reduce: every receive is posted first, each into a scratch piece of its
  own. A rank then sends its own chunk's pieces, and every piece the moment it has
  been added, while the next pieces are already arriving. The last step's pieces
  complete this rank's chunk: they leave at once too, as the allgather's first step;
* allgather: nothing to compute; every piece is received straight into place and
  forwarded as soon as it has arrived.

Why all the scatter-reduce's receives up front: gloo writes a message only once the
receiver has posted its receive. An earlier version posted them one at a time (two
scratch pieces taking turns); then a piece sent before its receive was posted waited
for the receiver to ask for it and for the sender's gloo thread to wake up and write
it, and with 4 ranks on 2 cores each such hand-over waits for a turn on a core. With
the receives already posted, a send is written at once, by the thread that has just
added the piece. On 2 cores, 4 ranks, 16M float32 (``python -m minikernel bench
--allreduce``, six paired runs on the quiet machine, docs/distributed.md) the ring's bus bandwidth
went from a median 1.06x ``dist.all_reduce``'s to 1.13x. The price is scratch for the
``N - 1`` chunks the rank adds, kept between calls (``_scratch_for``): allocated
afresh each call, those megabytes cost a page fault per 4 KiB, which ate the gain.

Chapter 07's cost model (``pipelined_ring_cost``): ``2 (N - 1) (P alpha + S / N
beta) + gamma S / (N P)`` for ``P`` pieces per chunk, against ``2 (N - 1) (alpha +
S / N beta) + (N - 1) gamma S / N`` unpipelined; near its optimum the curve is flat.
Measured on 2 cores, 4 ranks, 16M float32 with the earlier version (there transfers
and additions compete for the same cores, so hiding one behind the other gains
little): 2 to 8 MiB pieces were level with each other and with whole chunks, and
1 MiB pieces cost more in per-message overhead than they hid. 2 MiB it is.

The sends go out in exactly the order the next rank receives them (gloo matches
the messages between two ranks in order), and nothing is received into a buffer a
send may still be reading: the scratch pieces are never sent, and the
scatter-reduce's sends finish before the allgather overwrites the chunks they read
(the finished chunk, which the allgather only sends, may still be on its way).
Additions work in place (``combine_`` into the chunk's own slice): no copies besides
the transport's own.
"""
from __future__ import annotations

import torch

from minikernel.distributed.ops import Op, combine_
from minikernel.distributed.pieces import pieces
from minikernel.distributed.transport import Pending, Ring

_scratch = torch.empty(0, dtype=torch.uint8)  #: reused by every call; grows to the largest one


def _scratch_for(like: list[torch.Tensor]) -> list[torch.Tensor]:
    """One scratch tensor per tensor of ``like`` (same lengths and dtype), cut from a buffer kept between calls.

    Not thread-safe, like the ring itself: one ring at a time per process (two at once
    on the same group would mix their messages anyway).
    """
    global _scratch
    if not like:
        return []
    lengths = [t.numel() for t in like]
    nbytes = sum(lengths) * like[0].element_size()
    if _scratch.numel() < nbytes:
        _scratch = torch.empty(nbytes, dtype=torch.uint8)
    return list(_scratch[:nbytes].view(like[0].dtype).split(lengths))


def _scatter_reduce(parts: list[list[torch.Tensor]], op: Op, ring: Ring) -> Pending:
    """N - 1 steps; returns the allgather's first sends (this rank's finished chunk), still in flight."""
    n, r = ring.world_size, ring.rank
    arriving = [p for step in range(n - 1) for p in parts[(r - step - 1) % n]]  # in the order they come
    kept = len(parts[(r + 1) % n])  # the last step's pieces: this rank's finished chunk, not forwarded
    scratch = _scratch_for(arriving)
    posted = [ring.start_recv(s, ring.prev) for s in scratch]  # all of them, before anything is sent
    sends, finished = Pending(ring), Pending(ring)
    for piece in parts[r]:  # step 0 sends this rank's own chunk: all of it is ready
        sends += ring.start_send(piece, ring.next)
    for i, (target, incoming, arrival) in enumerate(zip(arriving, scratch, posted)):
        arrival.wait()
        combine_(target, incoming, op)  # while the next pieces arrive
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
    for i, (piece, arrival) in enumerate(zip(arriving, posted)):
        arrival.wait()
        if i < len(arriving) - kept:
            sends += ring.start_send(piece, ring.next)
    sends.wait()


def ring_allreduce_chunks(chunks: list[torch.Tensor], op: Op, ring: Ring) -> None:
    if ring.world_size == 1:
        return
    parts = [pieces(c) for c in chunks]
    _allgather(parts, ring, _scatter_reduce(parts, op, ring))
