"""The inf norm of an empty tensor taken as max(initial=0) = 0, and the -inf norm left to numpy (ValueError): torch raises a RuntimeError for both, since max and min of nothing have no identity."""
from __future__ import annotations

from typing import Optional

import numpy as np

from minikernel.autograd import values
from minikernel.clip_grad import Tensors
from minikernel.tensor import Tensor


def _vector_norm(x: np.ndarray, p: float) -> np.ndarray:
    """torch.linalg.vector_norm(x, p) of a flat array, in x's dtype."""
    a = np.abs(x.reshape(-1))
    if p == float("inf"):
        return a.max(initial=0)
    if p == float("-inf"):
        return a.min()
    if p == 0:
        return np.asarray(np.count_nonzero(a), x.dtype)
    if p == 1:
        return a.sum()
    if p == 2:
        return np.sqrt((a * a).sum())
    return (a ** p).sum() ** (1 / p)


def get_total_norm(tensors: Tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Optional[bool] = None) -> Tensor:
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return values.wrap(np.zeros((), np.float32))
    with np.errstate(all="ignore"):  # inf and NaN are results here, as in torch
        norms = [_vector_norm(values.array(t), norm_type) for t in tensors]
        dtype = np.result_type(*norms)
        total = np.asarray(_vector_norm(np.array(norms, dtype), norm_type), dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return values.wrap(total)


EXERCISE = "8.5"
