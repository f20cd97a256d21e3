"""Only the last bucket's allreduce is waited on, as if the handles finished in order."""
from __future__ import annotations

EXERCISE = "7.6"


def finalize_backward(reducer):
    last = reducer.buckets[-1]
    if last.work is not None:
        last.work.wait()
    for bucket in reducer.buckets:
        for position, index in enumerate(bucket.params):
            grad = reducer.params[index].grad
            grad.copy_(bucket.slot(position, grad.numel()).view_as(grad))
    reducer.expect_autograd_hooks = False
