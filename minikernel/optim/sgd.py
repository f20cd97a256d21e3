"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

Exercise 8.2 is ``sgd``, the update of a list of parameters (torch's functional
``torch.optim.sgd.sgd``); the ``SGD`` class around it is complete: it collects, per
group, the parameters that have a gradient and their momentum buffers, calls
``sgd`` with the group's options, and stores the new buffers in ``state``.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np  # noqa: F401 - for your sgd

from ..autograd import values  # noqa: F401 - values.array / values.wrap, for your sgd
from ..autograd.grad_mode import no_grad
from ..course.exercise import exercise
from ..tensor import Tensor
from .optimizer import Optimizer, Params


@exercise("8.2")
def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffer_list: list[Optional[Tensor]],
        weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool,
        maximize: bool) -> None:
    r"""One SGD step for each ``params[i]`` with gradient ``grads[i]``, in place.

    For each parameter :math:`\theta` with gradient :math:`g` (``-g`` if ``maximize``)::

        g = g + weight_decay * θ                      (if weight_decay != 0)
        if momentum != 0:
            b = copy of g                             (first step: momentum_buffer_list[i] is None)
            b = momentum * b + (1 - dampening) * g    (later steps, b updated in place)
            g = g + momentum * b  if nesterov  else  b
        θ = θ - lr * g                                (in place)

    * Compute with numpy on the tensors' memory: ``values.array(t)`` is a numpy view
      of ``t`` (write into it with ``a -= ...`` or ``a[...] = ...``), ``values.wrap(array)``
      a new Tensor holding a copy of ``array``. Never change ``grads[i]`` itself.
      Parameters and gradients may be non-contiguous (transposed, every other column):
      write into the parameter's own elements, not into a reshaped copy of them.
    * A new buffer goes into ``momentum_buffer_list[i]`` (a Tensor); an existing one
      is updated in place.
    * After writing into a parameter, call ``param._bump_version()``: autograd then
      knows its saved values are stale (torch's ``add_`` does the same).

    Matches: ``torch.optim.sgd.sgd(params, grads, momentum_buffer_list, weight_decay=...,
    momentum=..., lr=..., dampening=..., nesterov=..., maximize=...)`` — the parameters
    and buffers after any number of steps, to float rounding.
    """
    # TODO(8.2): ≈15 lines
    raise NotImplementedError("exercise 8.2 (sgd) is not implemented yet")


class SGD(Optimizer):
    r"""Stochastic gradient descent, optionally with momentum (``torch.optim.SGD``).

    Args:
        params (iterable): parameters or param-group dicts to optimize.
        lr (float, optional): learning rate. Default: ``1e-3``
        momentum (float, optional): momentum factor. Default: ``0``
        dampening (float, optional): dampening of the gradient's share in the momentum. Default: ``0``
        weight_decay (float, optional): L2 penalty, added to the gradient. Default: ``0``
        nesterov (bool, optional): Nesterov momentum (needs momentum > 0, dampening 0). Default: ``False``
        maximize (bool, optional): ascend instead of descend. Default: ``False``
        foreach, differentiable, fused: torch's implementation switches; minikernel has one
            implementation (numpy, one tensor at a time), so only the defaults are accepted
            (``foreach`` any value).

    Example::

        >>> opt = minikernel.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad()
        >>> loss_fn(model(x), y).backward()
        >>> opt.step()
    """

    def __init__(self, params: Params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, differentiable: bool = False, fused: Optional[bool] = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self._check_options("SGD", foreach, fused, differentiable)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            buffers = [self.state[p].get("momentum_buffer") for p in params] if group["momentum"] != 0 else []
            sgd(params, [p.grad for p in params], buffers, weight_decay=group["weight_decay"],
                momentum=group["momentum"], lr=group["lr"], dampening=group["dampening"],
                nesterov=group["nesterov"], maximize=group["maximize"])
            if group["momentum"] != 0:
                for p, buffer in zip(params, buffers):
                    self.state[p]["momentum_buffer"] = buffer
        return loss
