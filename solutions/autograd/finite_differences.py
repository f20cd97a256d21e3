"""Reference bodies for minikernel/autograd/finite_differences.py (exercise 3.9)."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import minikernel.autograd.api as A
import minikernel.autograd.finite_differences as G
import minikernel.autograd.values as V
from minikernel.tensor import Tensor


def numerical_jacobian(fn: Callable, inputs: Sequence[Tensor], eps: float = 1e-6) -> list[np.ndarray]:
    jacobians = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        view = x._numpy_view()
        rows = []
        for index in np.ndindex(view.shape):
            original = view[index].copy()
            # fn runs in the caller's grad mode, as torch's gradcheck evaluates it
            view[index] = original + eps
            plus = V.array(fn(*inputs)).astype(np.float64).ravel()
            view[index] = original - eps
            minus = V.array(fn(*inputs)).astype(np.float64).ravel()
            view[index] = original
            rows.append((plus - minus) / (2 * eps))
        out_numel = V.array(fn(*inputs)).size if not rows else rows[0].size
        jacobians.append(np.array(rows).reshape(view.size, out_numel))
    return jacobians


def gradcheck(func: Callable, inputs: Sequence[Tensor] | Tensor, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    numerical = G.numerical_jacobian(func, inputs, eps)
    out = func(*inputs)
    analytical = [np.zeros((x.numel(), out.numel())) for x in wrt]
    for i in range(out.numel()):
        unit = np.zeros(out.numel(), V.array(out).dtype)
        unit[i] = 1
        grads = A.grad(out, wrt, V.wrap(unit.reshape(out.shape)), retain_graph=True, allow_unused=True)
        for j, g in enumerate(grads):
            if g is not None:
                analytical[j][:, i] = V.array(g).ravel()
    for j, (a, n) in enumerate(zip(analytical, numerical)):
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            if raise_exception:
                raise G.GradcheckError(f"Jacobian mismatch for output 0 with respect to input {j},\n"
                                       f"numerical:{n}\nanalytical:{a}\n")
            return False
    return True
