"""Reference solution for exercise 7.6 (``minikernel/distributed/reducer.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import minikernel.distributed.reducer as mk_reducer

if TYPE_CHECKING:
    from minikernel.distributed.reducer import Reducer


def mark_ready(reducer: "Reducer", index: int) -> None:
    if not reducer.expect_autograd_hooks:
        return
    grad = reducer.params[index].grad
    bucket, position = reducer.locate[index]
    bucket.slot(position, grad.numel()).copy_(grad.flatten()).div_(reducer.world_size)
    bucket.pending -= 1
    buckets = reducer.buckets
    while reducer.next_bucket < len(buckets) and buckets[reducer.next_bucket].pending == 0:
        reducer.launch(buckets[reducer.next_bucket])
        reducer.next_bucket += 1
    if reducer.next_bucket == len(buckets):
        mk_reducer.finalize_backward(reducer)


def finalize_backward(reducer: "Reducer") -> None:
    for bucket in reducer.buckets:
        if bucket.work is not None:
            bucket.work.wait()
        for position, index in enumerate(bucket.params):
            grad = reducer.params[index].grad
            grad.copy_(bucket.slot(position, grad.numel()).view_as(grad))
    reducer.expect_autograd_hooks = False
