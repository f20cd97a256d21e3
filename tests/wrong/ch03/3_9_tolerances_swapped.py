"""gradcheck passes its tolerances to np.allclose positionally in the wrong order (atol as rtol, rtol as atol)."""
EXERCISE = "3.9"

import numpy as np

import minikernel.autograd.api as A
import minikernel.autograd.finite_differences as G
import minikernel.autograd.values as V
from minikernel.tensor import Tensor


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
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
        if not np.allclose(a, n, atol, rtol):
            if raise_exception:
                raise G.GradcheckError(f"Jacobian mismatch for output 0 with respect to input {j},\n"
                                       f"numerical:{n}\nanalytical:{a}\n")
            return False
    return True
