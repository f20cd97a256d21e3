"""Gradient clipping by total norm (``torch.nn.utils.clip_grad_norm_``), exercise 8.5.

One norm over *all* gradients, as if they were concatenated into a single vector::

    total = || [ ||g_1||_p, ||g_2||_p, ... ] ||_p      ( = || concat(g_1, g_2, ...) ||_p )

and, when it exceeds ``max_norm``, every gradient is scaled by the same factor
``max_norm / (total + 1e-6)`` — the direction of the whole update is kept, only its
length shrinks. torch splits this in two public functions, and so do we:
``get_total_norm`` and ``clip_grads_with_norm_`` are the exercise;
``clip_grad_norm_`` (complete) calls one after the other.
"""
from __future__ import annotations

import types
import warnings
from typing import Iterable, Optional, Union

import numpy as np  # noqa: F401 - for your get_total_norm and clip_grads_with_norm_

from .autograd import values  # noqa: F401 - values.array / values.wrap, for your exercise
from .autograd.grad_mode import no_grad
from .course.exercise import exercise
from .tensor import Tensor

Tensors = Union[Tensor, Iterable[Tensor]]  #: one tensor or an iterable of them


@exercise("8.5")
def get_total_norm(tensors: Tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Optional[bool] = None) -> Tensor:
    r"""The ``norm_type``-norm of all ``tensors`` together, as a 0-d Tensor.

    * ``tensors`` is a Tensor (treat it as ``[tensors]``) or an iterable of them; an empty
      one gives ``minikernel.tensor(0.0)``.
    * ``norm_type = float(norm_type)`` (so ``"inf"`` works). The norm of each tensor, then
      the same norm of those norms: for finite p, :math:`(\sum_t \|g_t\|_p^p)^{1/p}`; for
      ``inf`` the largest ``|x|`` of any tensor, for ``-inf`` the smallest (torch:
      ``torch.linalg.vector_norm``). The largest or smallest of no numbers does not exist: when
      ``norm_type`` is ``inf`` or ``-inf`` and any tensor is empty, raise a ``RuntimeError`` whose
      message says that the norm cannot be computed on an empty tensor, as torch does.
    * With ``error_if_nonfinite`` and a total that is inf or NaN, raise
      ``RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is
      non-finite, so it cannot be clipped. To disable this error and scale the gradients by
      the non-finite norm anyway, set `error_if_nonfinite=False`")``.
    * ``foreach`` picks torch's implementation; ignore it.

    Compute with numpy on ``values.array(t)``; return ``values.wrap(...)`` of a 0-d array
    in the tensors' dtype (float32 for float32 gradients; float64 when float32 and float64
    gradients mix, whichever comes first: the norms are promoted together, as torch stacks them).

    Matches: ``torch.nn.utils.get_total_norm(tensors, norm_type, error_if_nonfinite)`` (value,
    dtype, error).
    """
    # TODO(8.5): ≈15 lines
    raise NotImplementedError("exercise 8.5 (get_total_norm) is not implemented yet")


@exercise("8.5")
def clip_grads_with_norm_(parameters: Tensors, max_norm: float, total_norm: Tensor,
                          foreach: Optional[bool] = None) -> None:
    r"""Scale the gradient of every parameter in ``parameters`` (those whose ``.grad`` is not
    None) by ``min(max_norm / (total_norm + 1e-6), 1)``, in place. ``parameters`` is a Tensor
    (treat it as ``[parameters]``) or an iterable of them.

    The factor is computed in ``total_norm``'s dtype and converted to each gradient's dtype
    before multiplying (float32 gradients by a float32 factor); torch multiplies even when it is 1
    (no branch on the value, which would cost a GPU sync). Gradients may be non-contiguous:
    multiply their own elements, not a reshaped copy. Bump each gradient's version
    after writing it (``g._bump_version()``). A non-finite ``total_norm`` turns the
    gradients into zeros or NaN, as in torch.

    Matches: ``torch.nn.utils.clip_grads_with_norm_(parameters, max_norm, total_norm)``.
    """
    # TODO(8.5): ≈8 lines
    raise NotImplementedError("exercise 8.5 (clip_grads_with_norm_) is not implemented yet")


def clip_grad_norm_(parameters: Tensors, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Optional[bool] = None) -> Tensor:
    r"""Clip the gradients of ``parameters`` so that their total norm is at most ``max_norm``;
    return the total norm before clipping (``torch.nn.utils.clip_grad_norm_``).

    Args:
        parameters (Tensor or iterable of Tensors): parameters whose ``.grad`` is clipped
            (those without a gradient are skipped).
        max_norm (float): the largest total norm allowed.
        norm_type (float, optional): p of the p-norm; ``inf`` (or ``"inf"``) for the largest
            absolute value. Default: ``2.0``
        error_if_nonfinite (bool, optional): raise if the total norm is inf or NaN. Default: ``False``
        foreach (bool, optional): accepted for compatibility; ignored. Default: ``None``

    An empty generator of parameters warns "`parameters` is an empty generator, no gradient
    clipping will occur." (torch 2.13's warning; torch 2.6 gives none).

    Example::

        >>> loss.backward()
        >>> total = clip_grad_norm_(model.parameters(), max_norm=5.0)
        >>> optimizer.step()
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)  # a generator would be exhausted by the first pass
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    with no_grad():
        grads = [p.grad for p in parameters if p.grad is not None]
        total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
        clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm
