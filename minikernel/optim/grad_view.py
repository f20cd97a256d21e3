"""Loss scaling for minikernel training: a ``GradScaler`` (torch's, or chapter 06's
``minikernel.amp.GradScaler``) driving a minikernel optimizer.

A GradScaler works on torch tensors: ``scale`` multiplies a torch loss, ``unscale_``
and ``step`` read ``optimizer.param_groups[i]["params"][j].grad`` as torch tensors.
Two small adapters let it work on minikernel's side without copying anything:

* ``scale_loss(scaler, loss)``: ``scaler.scale(loss)`` for a minikernel loss;
* ``TorchGradView(optimizer)``: the optimizer as the scaler sees it — its groups with
  torch tensors that share memory with the parameters and their gradients, and a
  ``step()`` that steps the minikernel optimizer.

So ``unscale_`` divides the minikernel gradients in place, and ``step`` skips the
minikernel optimizer's step after an inf/NaN, exactly as for a torch optimizer.
"""
from __future__ import annotations

from typing import Any

import torch

from ..autograd import functions as F
from ..tensor import Tensor
from .optimizer import Optimizer


def scale_loss(scaler: Any, loss: Tensor) -> Tensor:
    """``scaler.scale(loss)`` for a minikernel ``loss``: ``loss * S``, recorded by autograd.

    The scaler creates its scale on first use, as it would for a torch loss; S is a
    power of two by default, so scaling and unscaling change no bit of a float32 value
    that neither overflows nor underflows.
    """
    scale = scaler.scale(torch.ones((), dtype=torch.float32))  # S (creates the scale on first use)
    return F.mul(loss, float(scale))


class TorchGradView:
    """A minikernel optimizer as a GradScaler sees it.

    Args:
        optimizer (minikernel.optim.Optimizer): the optimizer to wrap.

    ``param_groups`` is rebuilt at every access (``backward`` makes new gradient
    tensors): each group's options, with ``"params"`` holding torch tensors over the
    parameters' memory whose ``.grad`` are torch tensors over the gradients' memory.

    Example::

        >>> view = TorchGradView(optimizer)
        >>> scale_loss(scaler, loss).backward()
        >>> scaler.unscale_(view)            # divides the minikernel gradients in place
        >>> clip_grad_norm_(model.parameters(), 1.0)
        >>> scaler.step(view)                # optimizer.step(), unless a gradient is inf/NaN
        >>> scaler.update()
    """

    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"TorchGradView wraps a minikernel optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        groups = []
        for group in self.optimizer.param_groups:
            params = []
            for p in group["params"]:
                shared = p.detach().to_torch()
                shared.grad = None if p.grad is None else p.grad.detach().to_torch()
                params.append(shared)
            groups.append({**group, "params": params})
        return groups

    def step(self, *args: Any, **kwargs: Any) -> Any:
        return self.optimizer.step(*args, **kwargs)

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none)
