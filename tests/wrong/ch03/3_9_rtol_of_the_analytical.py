"""gradcheck calls np.allclose(numerical, analytical): the relative tolerance is then taken of the analytical Jacobian, not of the numerical one as in torch."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import minikernel.autograd.api as A
import minikernel.autograd.finite_differences as G
from minikernel.autograd import values as V
from minikernel.tensor import Tensor

EXERCISE = "3.9"


def gradcheck(func: Callable, inputs: Sequence[Tensor] | Tensor, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True) -> bool:
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    numerical = G.numerical_jacobian(func, inputs, eps)
    out = func(*inputs)
    for j, n in enumerate(numerical):
        analytical = np.zeros((wrt[j].numel(), out.numel()))
        for i in range(out.numel()):
            unit = np.zeros(out.numel(), V.array(out).dtype)
            unit[i] = 1
            g = A.grad(out, wrt, V.wrap(unit.reshape(out.shape)), retain_graph=True, allow_unused=True)[j]
            if g is not None:
                analytical[:, i] = V.array(g).ravel()
        if not np.allclose(n, analytical, rtol=rtol, atol=atol):
            if raise_exception:
                raise G.GradcheckError(f"Jacobian mismatch for output 0 with respect to input {j},\n"
                                       f"numerical:{n}\nanalytical:{analytical}\n")
            return False
    return True
