"""Chapter 06 exercises: the pieces of gradient scaling that ``GradScaler`` calls.

Mixed precision computes in float16 (or bfloat16), whose smallest numbers are far
larger than float32's: small gradients round to zero. ``GradScaler`` multiplies the
loss by a large *scale* S before ``backward()`` so that every gradient is S times
larger (and survives), divides the gradients by S again before the optimizer sees
them, and skips the step when the scaled gradients overflowed to inf/NaN, lowering
S for the next iteration.

Each optimizer goes through three stages per iteration (``update()`` starts the
next one)::

    READY --unscale_()--> UNSCALED --step()--> STEPPED      (unscale_ is optional:
    READY --step()------------------------> STEPPED       step() unscales itself)

The complete class is ``minikernel.amp.GradScaler`` (``grad_scaler.py``); these
functions are the parts you write, in the order one training iteration calls them:

* 6.1 ``scale_outputs``: ``scaler.scale(loss)``
* 6.2 ``transition``: the stage machine and its errors
* 6.3 ``non_finite_check_and_unscale_``, ``unscale_grads_``: ``scaler.unscale_(opt)``
* 6.4 ``maybe_opt_step``: ``scaler.step(opt)``, skipped after inf/NaN
* 6.5 ``update_scale_``: ``scaler.update()``, growth and backoff

References: ``solutions/amp/scaling.py`` (``MINIKERNEL_SOLUTIONS=6.3`` to use one).
"""
from __future__ import annotations

from enum import Enum
from typing import Any, Callable, Iterable, Union

import torch

from ..course.exercise import exercise

Tensor = torch.Tensor
Outputs = Union[Tensor, Iterable[Any]]        #: a tensor, or (nested) lists/tuples/iterables of tensors
ScaleOn = Callable[[torch.device], Tensor]    #: device -> the scale as a 0-d float32 tensor there
FoundInfPerDevice = dict[torch.device, Tensor]  #: device -> 1-element float32 tensor, nonzero = inf/NaN seen


class OptState(Enum):
    """Where one optimizer is in the current iteration (same values as torch.amp.grad_scaler.OptState)."""

    READY = 0     #: after __init__ or update(): gradients are still scaled
    UNSCALED = 1  #: unscale_() ran: gradients are true gradients, inf/NaN recorded
    STEPPED = 2   #: step() ran (or was skipped) for this optimizer


#: The GradScaler methods that move an optimizer between stages.
METHODS = ("unscale_", "step", "update")


@exercise("6.1")
def scale_outputs(outputs: Outputs, scale_on: ScaleOn) -> Outputs:
    """Multiply ``outputs`` by the scale factor, keeping their structure.

    * a tensor ``t`` becomes ``t * scale_on(t.device)``;
    * a list or tuple becomes a list or tuple of the same type, each item scaled
      the same way (recursively: items may be tensors, lists, tuples, ...);
    * any other iterable becomes a *lazy* iterator over its scaled items
      (``map(...)``): nothing is multiplied until it is consumed. A dict is such an
      iterable too: its items are its keys, as in torch;
    * anything else raises ``ValueError("outputs must be a Tensor or an iterable of Tensors")``.

    ``scale_on(device)`` returns the current scale as a 0-d float32 tensor on
    ``device``; GradScaler creates the scale the first time it is asked, so do
    not call it before you meet a tensor.

    Matches: ``torch.amp.GradScaler("cpu").scale(outputs)`` (values, dtypes, structure).
    """
    # TODO(6.1): ≈7 lines
    raise NotImplementedError("exercise 6.1 (scale_outputs) is not implemented yet")


@exercise("6.2")
def transition(stage: OptState, method: str) -> OptState:
    """The stage an optimizer moves to when ``method`` is called on it in ``stage``.

    ======================  =========  ==========  ==========
    method \\ stage          READY      UNSCALED    STEPPED
    ======================  =========  ==========  ==========
    ``"unscale_"``          UNSCALED   error (1)   error (2)
    ``"step"``              STEPPED    STEPPED     error (3)
    ``"update"``            READY      READY       READY
    ======================  =========  ==========  ==========

    The errors are ``RuntimeError`` with torch's texts:

    1. ``"unscale_() has already been called on this optimizer since the last update()."``
    2. ``"unscale_() is being called after step()."``
    3. ``"step() has already been called since the last update()."``

    Any other ``method`` raises ``ValueError`` naming it and the three valid ones.

    Matches: ``torch.amp.GradScaler``'s ``_per_optimizer_states[id(optimizer)]["stage"]``
    after each call, and the RuntimeErrors of ``unscale_`` and ``step``.
    """
    # TODO(6.2): ≈12 lines
    raise NotImplementedError("exercise 6.2 (transition) is not implemented yet")


@exercise("6.3")
def non_finite_check_and_unscale_(grads: list[Tensor], found_inf: Tensor, inv_scale: Tensor) -> None:
    """Multiply every gradient in ``grads`` by ``inv_scale`` in place, and set
    ``found_inf`` to 1.0 if any element of any gradient is inf or NaN.

    ``found_inf`` (1-element float32) is only ever *set*, never cleared, so several
    calls accumulate into it. Each gradient is checked *before* it is multiplied: a finite
    gradient that overflows to inf when unscaled (``inv_scale`` > 1) is no inf found, as in
    torch. Gradients are multiplied even when an inf is found
    (the step will be skipped anyway). ``inv_scale`` is a 1-element float32 tensor:
    multiply with it as a tensor (``g.mul_(inv_scale)``), so a bfloat16 or float16
    gradient is multiplied in float32 and rounded once, as torch's kernel does.

    Matches: ``torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)``,
    bit for bit.
    """
    # TODO(6.3): ≈4 lines
    raise NotImplementedError("exercise 6.3 (non_finite_check_and_unscale_) is not implemented yet")


@exercise("6.3")
def unscale_grads_(optimizer: torch.optim.Optimizer, inv_scale: Tensor, found_inf: Tensor,
                   allow_fp16: bool) -> FoundInfPerDevice:
    """Unscale all gradients of ``optimizer`` and return where inf/NaN was found, per device.

    1. Collect ``p.grad`` for every ``p`` in every ``optimizer.param_groups[i]["params"]``,
       skipping only ``None`` (a frozen parameter, ``requires_grad=False``, that holds a
       gradient is unscaled too). A float16 gradient with ``allow_fp16=False`` raises
       ``ValueError("Attempting to unscale FP16 gradients.")`` — collect first, so that
       nothing has been changed when it raises.
    2. Split the gradients by device and dtype; call ``non_finite_check_and_unscale_``
       once per (device, dtype) group, with ``found_inf`` and ``inv_scale`` on that
       device (torch makes one copy of each per device, ``t.to(device, copy=True)``,
       shared by that device's dtype groups).
    3. Return ``{device: that device's found_inf}`` (``{}`` if no parameter has a
       gradient).

    Run it under ``torch.no_grad()``: unscaling is not part of any graph.

    Matches: ``torch.amp.GradScaler("cpu")._unscale_grads_(optimizer, inv_scale, found_inf,
    allow_fp16)``; with ``non_finite_check_and_unscale_`` it makes ``scaler.unscale_(opt)``.
    """
    # TODO(6.3): ≈15 lines
    raise NotImplementedError("exercise 6.3 (unscale_grads_) is not implemented yet")


@exercise("6.4")
def maybe_opt_step(optimizer: torch.optim.Optimizer, found_inf_per_device: FoundInfPerDevice,
                   *args: Any, **kwargs: Any) -> Any:
    """Call ``optimizer.step(*args, **kwargs)`` unless an inf/NaN was found; return its result.

    ``found_inf_per_device`` is what ``unscale_grads_`` returned for this optimizer.
    If it is empty, no gradient was checked: raise
    ``AssertionError("No inf checks were recorded for this optimizer.")``. If its
    values sum to zero, step and return what ``optimizer.step`` returned; otherwise
    skip the step (the parameters stay as they are) and return None.

    Matches: ``torch.amp.GradScaler("cpu").step(optimizer)`` after ``unscale_``:
    which steps are skipped, the return value, the AssertionError.
    """
    # TODO(6.4): ≈5 lines
    raise NotImplementedError("exercise 6.4 (maybe_opt_step) is not implemented yet")


@exercise("6.5")
def update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor, growth_factor: float,
                  backoff_factor: float, growth_interval: int) -> Tensor:
    """Back off or grow ``scale`` in place, count clean steps in ``growth_tracker``; return ``scale``.

    ``scale`` is a 0-d float32 tensor, ``growth_tracker`` a 0-d int32 tensor,
    ``found_inf`` a 1-element float32 tensor (the sum over all optimizers):

    * ``found_inf`` nonzero: ``scale *= backoff_factor`` and ``growth_tracker = 0``;
    * otherwise ``successful = growth_tracker + 1``; when ``successful == growth_interval``
      the scale grows to ``scale * growth_factor`` — unless that is inf in float32,
      then it stays — and ``growth_tracker = 0``; else ``growth_tracker = successful``.

    Multiply in float64 and round to float32 once (``scale.fill_(scale.item() * factor)``):
    torch's kernel does ``float * double`` and stores the product as float.

    Matches: ``torch._amp_update_scale_(scale, growth_tracker, found_inf, growth_factor,
    backoff_factor, growth_interval)``, bit for bit.
    """
    # TODO(6.5): ≈12 lines
    raise NotImplementedError("exercise 6.5 (update_scale_) is not implemented yet")
