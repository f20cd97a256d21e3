"""``gradcheck`` as ``torch.autograd.gradcheck`` runs it: exercise 3.9's check, and torch's contract around it.

Exercise 3.9 (``finite_differences.gradcheck``) compares, for a function of one output,
backward's Jacobian with central differences. ``torch.autograd.gradcheck`` adds, and so
does this ``gradcheck`` (the one ``minikernel.autograd`` exports):

* **inputs**: one Tensor, or a tuple or list of Tensors and other values. Every input
  that requires grad and is not float64 warns (``UserWarning``, torch's words: float32
  differences are too coarse for the tolerance); one with a dimension of stride 0 and
  size > 1 (``expand``) is a ``RuntimeError`` (perturbing one element would move
  several); no input requiring grad is a ``ValueError``.
* **grad mode**: the function runs with grad mode as the caller has it, also while it
  is being perturbed (3.9's ``numerical_jacobian`` calls it so; the caller's mode is set
  again inside the function, whatever mode it is called in), so a function that runs
  autograd inside itself (``grad``, ``backward``, hooks) behaves as under torch.
* **outputs**: one Tensor or a tuple. Those that require grad are checked one by one
  with exercise 3.9; a mismatch names the output by its place among them. When no
  output requires grad, every numerical Jacobian must be zero, else ``GradcheckError:
  Numerical gradient for function expected to be zero``.
* **backward multiplies by grad_output**: ``grad(outputs, inputs, zeros)`` must give
  zeros (or None), of the input's dtype and size.
* ``raise_exception=False`` turns a ``GradcheckError`` into ``False``; bad input raises
  either way.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from . import finite_differences as G, gradcheck_modes as modes, values as V
from .api import grad
from .finite_differences import GradcheckError
from .grad_mode import is_grad_enabled, set_grad_enabled

_DOUBLE = (np.dtype(np.float64), np.dtype(np.complex128))


def as_tuple(x: Any) -> tuple:
    """torch's ``_as_tuple``: a tuple as it is, a list as a tuple, anything else alone."""
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def check_inputs(inputs: tuple) -> None:
    """torch's ``_check_inputs``: warn for each input requiring grad that is not float64, refuse
    one that overlaps itself (a stride 0 over more than one element), and refuse no input at all."""
    any_requires_grad = False
    for idx, inp in enumerate(inputs):
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            continue
        if inp.dtype not in _DOUBLE:
            warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating point or "
                          "complex. This check will likely fail if all the inputs are not of double precision "
                          "floating point or complex. ", stacklevel=3)
        if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
            raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs "
                               "that are non-overlapping to be able to compute the numerical gradients correctly. "
                               "You should call .contiguous on the input before passing it to gradcheck.")
        any_requires_grad = True
    if not any_requires_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")


def _in_grad_mode(func: Callable, mode: bool) -> Callable:
    """``func`` run with grad mode ``mode``, whatever mode its caller has set."""
    def run(*args: Any) -> Any:
        with set_grad_enabled(mode):
            return func(*args)
    return run


def _output(func: Callable, k: int) -> Callable:
    def one(*args: Any) -> Tensor:
        return as_tuple(func(*args))[k]
    return one


def _check_no_differentiable_outputs(func: Callable, inputs: tuple, n_outputs: int, eps: float) -> None:
    for k in range(n_outputs):
        for jacobian in G.numerical_jacobian(_output(func, k), inputs, eps):
            if np.any(jacobian != 0):
                raise GradcheckError("Numerical gradient for function expected to be zero")


def _check_backward_mul_by_grad_output(outputs: tuple, inputs: tuple) -> None:
    """torch's ``_test_backward_mul_by_grad_output``: zero grad_outputs give zero gradients."""
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    zeros = [V.zeros_like(o) for o in outputs]
    for gi, di in zip(grad(outputs, wrt, zeros, allow_unused=True), wrt):
        if gi is None:
            continue
        if np.any(V.array(gi) != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if tuple(gi.shape) != tuple(di.shape):
            raise GradcheckError("grad is incorrect size")


def _gradcheck(func: Callable, inputs: Any, eps: float, atol: float, rtol: float, nondet_tol: float,
               fast_mode: bool) -> bool:
    inputs = as_tuple(inputs)
    check_inputs(inputs)
    func = _in_grad_mode(func, is_grad_enabled())
    func_out = as_tuple(func(*inputs))
    differentiable = [k for k, o in enumerate(func_out) if o.requires_grad]
    if not differentiable:
        if fast_mode:
            modes.fast_check_no_differentiable_outputs(func, inputs, len(func_out), eps, nondet_tol)
        else:
            _check_no_differentiable_outputs(func, inputs, len(func_out), eps)
        return True
    if fast_mode:
        modes.fast_check(func, inputs, differentiable, eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol)
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    for i, k in enumerate(differentiable if not fast_mode else ()):
        modes.check_reentrant(func_out[k], wrt, nondet_tol)
        try:
            G.gradcheck(_output(func, k), inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=True)
        except GradcheckError as err:
            raise GradcheckError(str(err).replace("for output 0 ", f"for output {i} ", 1)) from None
    _check_backward_mul_by_grad_output(tuple(func_out[k] for k in differentiable), inputs)
    return True


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_batched_grad: bool = False,
              fast_mode: bool = False) -> bool:
    """True when backward's Jacobian of every differentiable output matches central differences
    (exercise 3.9), with ``torch.autograd.gradcheck``'s handling of inputs, outputs and grad mode
    (see the module's docstring), its reentrancy check within ``nondet_tol`` and its ``fast_mode``
    (``gradcheck_modes.py``). A mismatch raises ``GradcheckError``, or gives False when not
    ``raise_exception``; invalid inputs raise ``ValueError``/``RuntimeError`` either way, and
    ``check_batched_grad=True`` raises ``NotImplementedError`` (minikernel has no vmap)."""
    modes.refuse_batched_grad(check_batched_grad)
    if raise_exception:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, fast_mode)
    try:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, fast_mode)
    except GradcheckError:
        return False
