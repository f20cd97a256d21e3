"""For ``norm_type=0`` the total adds up the nonzero counts of the tensors; torch counts the tensors whose count is nonzero."""
from __future__ import annotations

import numpy as np

from minikernel.autograd import values
from minikernel.tensor import Tensor

EXERCISE = "8.5"


def _vector_norm(x, p):
    a = np.abs(x.reshape(-1))
    if p == float("inf"):
        return a.max(initial=0)
    if p == float("-inf"):
        return a.min()
    if p == 0:
        return np.asarray(np.count_nonzero(a), x.dtype)
    return (a ** p).sum() ** (1 / p)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return values.wrap(np.zeros((), np.float32))
    with np.errstate(all="ignore"):
        norms = [_vector_norm(values.array(t), norm_type) for t in tensors]
        dtype = np.result_type(*norms)
        if norm_type == 0:
            total = np.asarray(np.sum(np.array(norms, dtype)), dtype)
        else:
            total = np.asarray(_vector_norm(np.array(norms, dtype), norm_type), dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return values.wrap(total)
