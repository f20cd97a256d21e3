"""Each bucket is launched the moment it is complete, even before the buckets ahead of it (out of order)."""
from __future__ import annotations

import minikernel.distributed.reducer as mk_reducer

EXERCISE = "7.6"


def mark_ready(reducer, index):
    if not reducer.expect_autograd_hooks:
        return
    grad = reducer.params[index].grad
    bucket, position = reducer.locate[index]
    bucket.slot(position, grad.numel()).copy_(grad.flatten()).div_(reducer.world_size)
    bucket.pending -= 1
    if bucket.pending == 0:
        reducer.launch(bucket)
        reducer.next_bucket += 1
    if reducer.next_bucket == len(reducer.buckets):
        mk_reducer.finalize_backward(reducer)
