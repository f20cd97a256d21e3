"""The scratch buffer has the size of this rank's own chunk: wrong when chunk sizes differ by one."""
from __future__ import annotations

import torch

from minikernel.distributed.ops import combine_

EXERCISE = "7.3"


def ring_allreduce_chunks(chunks, op, ring):
    n, r = ring.world_size, ring.rank
    scratch = torch.empty_like(chunks[r])
    for step in range(n - 1):
        recv = (r - step - 1) % n
        ring.exchange(chunks[(r - step) % n], scratch[:chunks[recv].numel()])
        combine_(chunks[recv], scratch[:chunks[recv].numel()], op)
    for step in range(n - 1):
        ring.exchange(chunks[(r + 1 - step) % n], chunks[(r - step) % n])
