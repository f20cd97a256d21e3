"""finalize_backward copies the means back without waiting for an asynchronous allreduce to finish."""
from __future__ import annotations

EXERCISE = "7.6"


def finalize_backward(reducer):
    for bucket in reducer.buckets:
        for position, index in enumerate(bucket.params):
            grad = reducer.params[index].grad
            grad.copy_(bucket.slot(position, grad.numel()).view_as(grad))
    reducer.expect_autograd_hooks = False
