"""``Adam`` and ``AdamW``: adaptive moments, with L2 or decoupled weight decay.

Exercise 8.3 is ``adam``, the update of a list of parameters (torch's functional
``torch.optim.adam.adam``, single-tensor path). ``Adam`` and ``AdamW`` are the same
class around it: AdamW only sets ``decoupled_weight_decay=True`` (and a default
weight decay of 0.01), which shrinks the parameter itself instead of adding
``weight_decay * θ`` to the gradient.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..autograd import values
from ..autograd.grad_mode import no_grad
from ..course.exercise import exercise
from ..tensor import Tensor
from .optimizer import Optimizer, Params

Betas = tuple[float, float]


@exercise("8.3")
def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
         max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], amsgrad: bool, beta1: float, beta2: float,
         lr: float, weight_decay: float, eps: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    r"""One Adam step for each ``params[i]``, in place; its state tensors are updated in place too.

    For parameter :math:`\theta`, gradient :math:`g` (``-g`` if ``maximize``), first and second
    moments ``m = exp_avgs[i]``, ``v = exp_avg_sqs[i]`` and step counter ``t = state_steps[i]``
    (a 0-d float32 tensor)::

        t = t + 1
        if weight_decay != 0:
            θ = θ * (1 - lr * weight_decay)   if decoupled_weight_decay   (AdamW)
            g = g + weight_decay * θ          otherwise                   (Adam: L2 in the gradient)
        m = m + (1 - beta1) * (g - m)                  (torch: m.lerp_(g, 1 - beta1))
        v = beta2 * v + (1 - beta2) * g * g
        step_size = lr / (1 - beta1 ** t)
        v_hat_sqrt = sqrt(v) / sqrt(1 - beta2 ** t)
            (with amsgrad: vmax = max(vmax, v) in place, max_exp_avg_sqs[i], and use sqrt(vmax))
        θ = θ - step_size * m / (v_hat_sqrt + eps)

    Compute with numpy on ``values.array(t)`` views, write every state tensor and the
    parameter in place, never change ``grads[i]``, and call ``param._bump_version()``
    after writing a parameter. ``max_exp_avg_sqs`` is empty unless ``amsgrad``. Parameters,
    gradients and state may be non-contiguous: write into their own elements, never into a
    reshaped copy.

    Matches: ``torch.optim.adam.adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
    state_steps, amsgrad=..., beta1=..., beta2=..., lr=..., weight_decay=..., eps=...,
    maximize=..., decoupled_weight_decay=...)`` — parameters and state after any number of
    steps, to float rounding.
    """
    # TODO(8.3): ≈22 lines
    raise NotImplementedError("exercise 8.3 (adam) is not implemented yet")


class Adam(Optimizer):
    r"""Adam (``torch.optim.Adam``); with ``decoupled_weight_decay=True`` it is AdamW.

    Args:
        params (iterable): parameters or param-group dicts to optimize.
        lr (float, optional): learning rate. Default: ``1e-3``
        betas (Tuple[float, float], optional): decay rates of the first and second moment
            averages. Default: ``(0.9, 0.999)``
        eps (float, optional): added to the denominator. Default: ``1e-8``
        weight_decay (float, optional): weight decay (L2 penalty). Default: ``0``
        amsgrad (bool, optional): use the maximum of past second moments. Default: ``False``
        maximize (bool, optional): ascend instead of descend. Default: ``False``
        decoupled_weight_decay (bool, optional): AdamW's decay of the parameter itself. Default: ``False``
        foreach, capturable, differentiable, fused: torch's implementation switches; only the
            defaults are accepted (``foreach`` any value).

    Example::

        >>> opt = minikernel.optim.Adam(model.parameters(), lr=1e-3)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: Betas = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None, decoupled_weight_decay: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self._check_options(type(self).__name__, foreach, fused, differentiable, capturable)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _state_of(self, p: Tensor, amsgrad: bool) -> dict[str, Any]:
        """The state of ``p``, made on its first step: ``step`` (0-d float32, as torch keeps
        it on the CPU) and zero moments of ``p``'s shape and dtype."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = values.wrap(np.zeros((), np.float32))
            state["exp_avg"] = values.wrap(np.zeros(p.shape, p.dtype))
            state["exp_avg_sq"] = values.wrap(np.zeros(p.shape, p.dtype))
            if amsgrad:
                state["max_exp_avg_sq"] = values.wrap(np.zeros(p.shape, p.dtype))
        return state

    @no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            states = [self._state_of(p, group["amsgrad"]) for p in params]
            beta1, beta2 = group["betas"]
            adam(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                 [s["exp_avg_sq"] for s in states],
                 [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else [],
                 [s["step"] for s in states], amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                 weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                 decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


class AdamW(Adam):
    r"""AdamW (``torch.optim.AdamW``): Adam with decoupled weight decay,
    :math:`\theta \leftarrow \theta (1 - \text{lr} \cdot \text{weight\_decay})` before the Adam step.

    Args: as ``Adam``, but ``weight_decay`` defaults to ``1e-2`` and
    ``decoupled_weight_decay`` is always True.

    Example::

        >>> opt = minikernel.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: Betas = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:  # an AdamW stays AdamW whatever the checkpoint says
            group["decoupled_weight_decay"] = True
