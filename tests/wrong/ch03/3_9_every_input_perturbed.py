"""numerical_jacobian makes a Jacobian for every tensor input, also those that do not require grad, so gradcheck pairs the Jacobians with the wrong inputs."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minikernel.autograd import values as V
from minikernel.autograd.grad_mode import no_grad
from minikernel.tensor import Tensor

EXERCISE = "3.9"


def numerical_jacobian(fn: Callable, inputs: Sequence[Tensor], eps: float = 1e-6) -> list[np.ndarray]:
    jacobians = []
    out_numel = V.array(fn(*inputs)).size
    for x in inputs:
        view = x._numpy_view()
        rows = []
        for index in np.ndindex(view.shape):
            original = view[index].copy()
            with no_grad():
                view[index] = original + eps
                plus = V.array(fn(*inputs)).astype(np.float64).ravel()
                view[index] = original - eps
                minus = V.array(fn(*inputs)).astype(np.float64).ravel()
            view[index] = original
            rows.append((plus - minus) / (2 * eps))
        jacobians.append(np.array(rows).reshape(view.size, out_numel))
    return jacobians
