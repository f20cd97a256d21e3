"""The gradients are multiplied only when the factor is below 1: a NaN total leaves them as they were, and unclipped gradients keep their version."""
from __future__ import annotations

import numpy as np

from minikernel.autograd import values
from minikernel.tensor import Tensor

EXERCISE = "8.5"


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    total = values.array(total_norm)
    with np.errstate(all="ignore"):
        coef = np.minimum(np.reciprocal(total + total.dtype.type(1e-6)) * max_norm, 1.0)
        if coef < 1:
            for g in grads:
                array = values.array(g)
                array *= coef.astype(array.dtype)
                g._bump_version()
