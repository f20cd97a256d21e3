"""numerical_jacobian evaluates fn under no_grad ("no graph needed for finite differences"): a function that runs autograd inside itself fails."""
EXERCISE = "3.9"

import numpy as np

import minikernel.autograd.values as V
from minikernel.autograd.grad_mode import no_grad
from minikernel.tensor import Tensor


def numerical_jacobian(fn, inputs, eps=1e-6):
    jacobians = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        view = x._numpy_view()
        rows = []
        with no_grad():
            for index in np.ndindex(view.shape):
                original = view[index].copy()
                view[index] = original + eps
                plus = V.array(fn(*inputs)).astype(np.float64).ravel()
                view[index] = original - eps
                minus = V.array(fn(*inputs)).astype(np.float64).ravel()
                view[index] = original
                rows.append((plus - minus) / (2 * eps))
            out_numel = V.array(fn(*inputs)).size if not rows else rows[0].size
        jacobians.append(np.array(rows).reshape(view.size, out_numel))
    return jacobians
