"""``gradcheck``'s options beyond exercise 3.9's check, as ``torch.autograd.gradcheck`` has them.

* ``nondet_tol`` (default 0.0): torch computes backward's Jacobian of each differentiable
  output twice and refuses a backward whose two runs differ by more than ``nondet_tol`` in
  any element ("not reentrant"), before comparing with the numerical Jacobian.
  ``check_reentrant`` does the same: row ``i`` of the Jacobian is
  ``grad(output, inputs, e_i)``.
* ``fast_mode=True``: instead of whole Jacobians ``J`` (one backward per output element, one
  pair of evaluations per input element), one random unit vector ``u`` per input and ``v``
  per output (uniform in [0, 1), divided by their norm) and a single number per pair:
  the numerical ``v · (J u)``, ``J u`` the central difference along ``u``,

      J u ≈ (f(x + eps·u) - f(x - eps·u)) / (2·eps),

  against the analytical ``(vᵀ J) · u``, ``vᵀ J = grad(output, inputs, v)`` (computed
  twice, the reentrancy check above). ``atol`` is scaled by ``sum(u)·sum(v)`` (each
  of the ``|v||u|`` products an ``atol`` in slow mode would allow). A mismatch names the output
  and input and shows both numbers, then the whole Jacobians in slow mode (exercise 3.9's
  ``numerical_jacobian`` and the rows above). The vectors come from numpy's generator with
  a fixed seed, not torch's: the verdict is torch's except within rounding of the tolerance.
* ``check_batched_grad=True`` needs ``vmap``, which minikernel does not have: refused with
  ``NotImplementedError`` naming the option.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..tensor import Tensor
from . import finite_differences as G, values as V
from .api import grad
from .finite_differences import GradcheckError

_NOT_REENTRANT = ("Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                  "times gives different values, although analytical gradient matches numerical gradient."
                  "The tolerance for nondeterminism was {tol}.\n\nIf the backward is nondeterministic on "
                  "purpose, call gradcheck with nondet_tol=<tol>.")


def refuse_batched_grad(check_batched_grad: bool) -> None:
    if check_batched_grad:
        raise NotImplementedError("gradcheck(check_batched_grad=True) compares backward with vmap(backward), and "
                                  "minikernel has no vmap: call gradcheck with check_batched_grad=False")


def _vjp(output: Tensor, wrt: Sequence[Tensor], v: np.ndarray) -> list[np.ndarray]:
    """``vᵀ J`` for each input of ``wrt`` (flattened; zeros where backward gives None)."""
    grads = grad(output, list(wrt), V.wrap(v.reshape(output.shape), output.dtype), retain_graph=True,
                 allow_unused=True)
    return [np.zeros(x.numel()) if g is None else V.array(g).astype(np.float64).ravel() for g, x in zip(grads, wrt)]


def _jacobians(output: Tensor, wrt: Sequence[Tensor]) -> list[np.ndarray]:
    """backward's Jacobian of ``output`` for each input, ``(input.numel(), output.numel())``."""
    n = output.numel()
    columns = [_vjp(output, wrt, row) for row in np.eye(n)]
    return [np.array([c[j] for c in columns]).reshape(n, x.numel()).T for j, x in enumerate(wrt)]


def _check_equal(first: list[np.ndarray], second: list[np.ndarray], nondet_tol: float) -> None:
    for a, b in zip(first, second):
        if a.size and np.abs(a - b).max() > nondet_tol:
            raise GradcheckError(_NOT_REENTRANT.format(tol=nondet_tol))


def check_reentrant(output: Tensor, wrt: Sequence[Tensor], nondet_tol: float) -> None:
    """torch's reentrancy check of slow mode: two runs of backward's Jacobian agree within ``nondet_tol``."""
    _check_equal(_jacobians(output, wrt), _jacobians(output, wrt), nondet_tol)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vec = rng.random(n)
    norm = np.linalg.norm(vec)
    return vec / norm if norm else vec


def _directional(func: Callable, inputs: tuple, x: Tensor, u: np.ndarray, eps: float, outputs: Sequence[int]):
    """``J u`` of each output in ``outputs`` for input ``x``: central differences along ``u``."""
    view, original = x._numpy_view(), x._numpy_view().copy()
    step = (eps * u).reshape(view.shape)
    view[...] = original - step
    before = [V.array(o).astype(np.float64).ravel() for o in _pick(func(*inputs), outputs)]
    view[...] = original + step
    after = [V.array(o).astype(np.float64).ravel() for o in _pick(func(*inputs), outputs)]
    view[...] = original
    return [(b - a) / (2 * eps) for a, b in zip(before, after)]


def _pick(out: Any, which: Sequence[int]) -> list[Tensor]:
    out = out if isinstance(out, tuple) else (out,)
    return [out[k] for k in which]


def fast_check(func: Callable, inputs: tuple, outputs: Sequence[int], *, eps: float, atol: float, rtol: float,
               nondet_tol: float) -> None:
    """torch's fast mode for the differentiable outputs ``outputs`` (their places in ``func``'s result)."""
    rng = np.random.default_rng(0)
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    out = _pick(func(*inputs), outputs)
    all_u = [_unit(rng, x.numel()) for x in wrt]
    all_v = [_unit(rng, o.numel()) for o in out]
    numerical = [[v @ ju for v, ju in zip(all_v, _directional(func, inputs, x, u, eps, outputs))]
                 for x, u in zip(wrt, all_u)]
    for k, (o, v) in enumerate(zip(out, all_v)):
        first = _vjp(o, wrt, v)
        _check_equal(first, _vjp(o, wrt, v), nondet_tol)
        for j, (vj, u) in enumerate(zip(first, all_u)):
            a, n = vj @ u, numerical[j][k]
            if not np.isclose(a, n, rtol=rtol, atol=atol * u.sum() * v.sum()):
                raise GradcheckError(f"Jacobian mismatch for output {k:d} with respect to input {j:d},\n"
                                     f"numerical:{n}\nanalytical:{a}\n" + _slow_mode_note(func, inputs, out, k, j,
                                                                                          outputs, eps, atol, rtol))


def _slow_mode_note(func, inputs, out, k, j, outputs, eps, atol, rtol) -> str:
    """The whole Jacobians of output ``k`` for input ``j`` in slow mode, for the error message."""
    def one(*args):
        return _pick(func(*args), outputs)[k]
    numerical = G.numerical_jacobian(one, inputs, eps)[j]
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    analytical = _jacobians(out[k], wrt)[j]
    note = ("\nThe above quantities relating the numerical and analytical jacobians are computed in fast mode. "
            "Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
            f"Numerical:\n {numerical}\nAnalytical:\n{analytical}\n\n"
            f"The max per-element difference (slow mode) is: {np.abs(numerical - analytical).max()}.\n")
    if np.allclose(analytical, numerical, rtol=rtol, atol=atol):
        note += ("\nFast gradcheck failed but element-wise differences are small: the check might pass with "
                 "fast_mode=False.")
    return note


def fast_check_no_differentiable_outputs(func: Callable, inputs: tuple, n_outputs: int, eps: float,
                                         nondet_tol: float) -> None:
    """Fast mode's check when no output requires grad: every output's ``J u`` is zero within ``nondet_tol``."""
    rng = np.random.default_rng(0)
    for x in (x for x in inputs if isinstance(x, Tensor) and x.requires_grad):
        for ju in _directional(func, inputs, x, _unit(rng, x.numel()), eps, range(n_outputs)):
            if ju.size and np.abs(ju).max() > nondet_tol:
                raise GradcheckError("Numerical gradient for function expected to be zero")
