"""finalize_backward waits for the allreduces but never copies the means back into .grad."""
from __future__ import annotations

EXERCISE = "7.6"


def finalize_backward(reducer):
    for bucket in reducer.buckets:
        if bucket.work is not None:
            bucket.work.wait()
    reducer.expect_autograd_hooks = False
