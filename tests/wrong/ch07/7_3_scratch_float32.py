"""The scratch tensor is made with ``torch.empty(n)``, float32 whatever the chunks' dtype: integer and float64 buffers arrive garbled."""
from __future__ import annotations

import torch

from minikernel.distributed.ops import combine_

EXERCISE = "7.3"


def ring_allreduce_chunks(chunks, op, ring):
    n, r = ring.world_size, ring.rank
    for step in range(n - 1):
        recv = (r - step - 1) % n
        scratch = torch.empty(chunks[recv].numel())
        ring.exchange(chunks[(r - step) % n], scratch)
        combine_(chunks[recv], scratch.to(chunks[recv].dtype), op)
    for step in range(n - 1):
        ring.exchange(chunks[(r + 1 - step) % n], chunks[(r - step) % n])
