"""The clip factor multiplies each gradient in the factor's dtype, rounded back after: float32 gradients with a float64 total norm are not multiplied by the float32 factor."""
from __future__ import annotations

from typing import Optional

import numpy as np

from minikernel.autograd import values
from minikernel.clip_grad import Tensors
from minikernel.tensor import Tensor

EXERCISE = "8.5"


def _vector_norm(x: np.ndarray, p: float) -> np.ndarray:
    """torch.linalg.vector_norm(x, p) of a flat array, in x's dtype."""
    a = np.abs(x.reshape(-1))
    if abs(p) == float("inf") and a.size == 0:  # max and min of nothing have no identity
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor "
                           "because the operation does not have an identity")
    if p == float("inf"):
        return a.max()
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


def clip_grads_with_norm_(parameters: Tensors, max_norm: float, total_norm: Tensor,
                          foreach: Optional[bool] = None) -> None:
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    total = values.array(total_norm)
    # torch: max_norm / (total_norm + 1e-6), a float over a tensor = reciprocal, then multiply
    with np.errstate(all="ignore"):
        coef = np.minimum(np.reciprocal(total + total.dtype.type(1e-6)) * max_norm, 1.0)
        for g in grads:
            array = values.array(g)
            array[...] = (array * coef).astype(array.dtype)
            g._bump_version()
