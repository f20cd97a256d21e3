"""The gradient is copied undivided and the sum divided by the world size when written back (``grad = slot / N``)."""
from __future__ import annotations

import minikernel.distributed.reducer as mk_reducer

EXERCISE = "7.6"


def mark_ready(reducer, index):
    if not reducer.expect_autograd_hooks:
        return
    grad = reducer.params[index].grad
    bucket, position = reducer.locate[index]
    bucket.slot(position, grad.numel()).copy_(grad.flatten())
    bucket.pending -= 1
    buckets = reducer.buckets
    while reducer.next_bucket < len(buckets) and buckets[reducer.next_bucket].pending == 0:
        reducer.launch(buckets[reducer.next_bucket])
        reducer.next_bucket += 1
    if reducer.next_bucket == len(buckets):
        mk_reducer.finalize_backward(reducer)


def finalize_backward(reducer):
    for bucket in reducer.buckets:
        if bucket.work is not None:
            bucket.work.wait()
        for position, index in enumerate(bucket.params):
            grad = reducer.params[index].grad
            grad.copy_(bucket.slot(position, grad.numel()).view_as(grad) / reducer.world_size)
    reducer.expect_autograd_hooks = False
