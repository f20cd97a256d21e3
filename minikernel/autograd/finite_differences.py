"""Exercise 3.9: check a backward formula against finite differences.

For a function ``f`` of tensors, the *numerical* Jacobian column for input
element ``j`` is the central difference

    J[:, j] ≈ (f(x + eps·e_j) - f(x - eps·e_j)) / (2·eps)

and the *analytical* Jacobian row for output element ``i`` is the gradient that
backward produces for a ``grad_output`` that is 1 at ``i`` and 0 elsewhere
(``autograd.grad``). ``gradcheck`` compares the two. Use float64: in float32
the differences' rounding error is larger than the tolerance, so even a correct
backward fails.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..course.exercise import exercise
from ..tensor import Tensor
from . import values as V  # noqa: F401 - for your exercise
from .api import grad  # noqa: F401 - for your exercise
from .grad_mode import enable_grad


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when the Jacobians differ (``torch.autograd.gradcheck.GradcheckError``)."""


@exercise("3.9")
def numerical_jacobian(fn: Callable, inputs: Sequence[Tensor], eps: float = 1e-6) -> list[np.ndarray]:
    """One numpy array per input that requires grad, of shape (input.numel(), output.numel()):
    row ``j`` is the central difference of the (flattened) output for input element ``j``.

    Perturb the input in place through a numpy view of its memory
    (``input._numpy_view()``: no autograd op, so nothing refuses the write into a leaf
    that requires grad), call ``fn(*inputs)`` with grad mode as the caller has it (torch
    evaluates the function so too: one that runs autograd inside itself, ``grad`` or
    ``backward``, must still work), and put the element back afterwards. ``fn`` returns
    one Tensor.

    Matches: ``torch.autograd.gradcheck``'s ``_get_numerical_jacobian`` (transposed the same way).
    """
    # TODO(3.9): ≈12 lines
    raise NotImplementedError("exercise 3.9 (numerical_jacobian) is not implemented yet")


@exercise("3.9")
def gradcheck(func: Callable, inputs: Sequence[Tensor] | Tensor, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True) -> bool:
    """True if backward's Jacobian matches ``numerical_jacobian`` for every input that requires grad.

    Analytical Jacobian: for each output element ``i``, ``autograd.grad(out, wrt, e_i,
    retain_graph=True, allow_unused=True)`` gives row ``i`` (a None gradient is a row of
    zeros). Compare with ``np.allclose(analytical, numerical, rtol, atol)``. On a mismatch
    raise ``GradcheckError`` naming the output and input (``"Jacobian mismatch for output 0
    with respect to input 0,"`` then both matrices) when ``raise_exception``, else return False.

    Matches: ``torch.autograd.gradcheck(func, inputs, eps=, atol=, rtol=, raise_exception=)``
    — the same verdict on the same function.
    """
    # TODO(3.9): ≈18 lines
    raise NotImplementedError("exercise 3.9 (gradcheck) is not implemented yet")


def gradgradcheck(func: Callable, inputs: Sequence[Tensor] | Tensor, grad_outputs=None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True) -> bool:
    """``gradcheck`` of the first derivatives: second derivatives against finite differences of the first.

    The first derivatives are ``grad(func(inputs), inputs, grad_outputs, create_graph=True)``,
    a function of the inputs and ``grad_outputs`` (random, requiring grad, when not given);
    each one is checked with ``gradcheck`` (exercise 3.9). Matches
    ``torch.autograd.gradgradcheck(func, inputs, grad_outputs)``'s verdict.
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    outputs = func(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(V.wrap(rng.standard_normal(o.shape), o.dtype).requires_grad_() for o in outputs)
    grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    n = len(inputs)

    def first_derivatives(*args: Tensor) -> tuple:
        ins, gos = args[:n], args[n:]
        with enable_grad():  # whatever the caller's grad mode: a derivative needs a graph
            outs = func(*ins)
            outs = outs if isinstance(outs, tuple) else (outs,)
            wrt = [x for x in ins if isinstance(x, Tensor) and x.requires_grad]
            return grad(outs, wrt, gos, create_graph=True, allow_unused=True)

    every = (*inputs, *grad_outputs)
    for i, first in enumerate(first_derivatives(*every)):
        if first is None or not first.requires_grad:
            continue  # a first derivative that doesn't depend on anything differentiable

        def one(*args: Tensor, i: int = i) -> Tensor:
            return first_derivatives(*args)[i]

        if not gradcheck(one, every, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception):
            return False
    return True
