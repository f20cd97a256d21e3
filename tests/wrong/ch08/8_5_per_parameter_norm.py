"""Each gradient is clipped by its own norm instead of the global one."""
from __future__ import annotations

import numpy as np

from minikernel.autograd import values
from minikernel.clip_grad import Tensors
from minikernel.tensor import Tensor

EXERCISE = "8.5"


def clip_grads_with_norm_(parameters: Tensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    total = values.array(total_norm)
    # torch: max_norm / (total_norm + 1e-6), a float over a tensor = reciprocal, then multiply
    with np.errstate(all="ignore"):
        for g in grads:
            array = values.array(g)
            own = np.sqrt((array.astype(total.dtype) ** 2).sum())
            coef = np.minimum(np.reciprocal(own + total.dtype.type(1e-6)) * max_norm, 1.0)
            array *= coef.astype(array.dtype)
            g._bump_version()
