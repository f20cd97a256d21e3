"""The mean is assigned as a new .grad instead of copied into the tensor autograd accumulated into."""
from __future__ import annotations

EXERCISE = "7.6"


def finalize_backward(reducer):
    for bucket in reducer.buckets:
        if bucket.work is not None:
            bucket.work.wait()
        for position, index in enumerate(bucket.params):
            grad = reducer.params[index].grad
            reducer.params[index].grad = bucket.slot(position, grad.numel()).view_as(grad).clone()
    reducer.expect_autograd_hooks = False
