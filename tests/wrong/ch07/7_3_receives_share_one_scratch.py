"""Every scatter-reduce receive is posted up front into one shared scratch: a later step's chunk can land before the earlier one is folded in."""
from __future__ import annotations

import torch

from minikernel.distributed.ops import combine_

EXERCISE = "7.3"


def ring_allreduce_chunks(chunks, op, ring):
    n, r = ring.world_size, ring.rank
    if n == 1:
        return
    scratch = torch.empty(max(c.numel() for c in chunks), dtype=chunks[0].dtype)
    incoming = [(r - step - 1) % n for step in range(n - 1)]
    # to overlap the transfers with the additions, every receive is posted at once; all into the same buffer
    arrivals = [ring.start_recv(scratch[:chunks[i].numel()], ring.prev) for i in incoming]
    sends = ring.start_send(chunks[r], ring.next)
    for step, (i, arrival) in enumerate(zip(incoming, arrivals)):
        arrival.wait()
        combine_(chunks[i], scratch[:chunks[i].numel()], op)
        if step < n - 2:
            sends += ring.start_send(chunks[i], ring.next)
    sends.wait()
    for step in range(n - 1):
        ring.exchange(chunks[(r + 1 - step) % n], chunks[(r - step) % n])
