"""An existing momentum buffer is replaced by a new tensor instead of being updated in place: the state held by the caller goes stale."""
from __future__ import annotations

from typing import Optional

from minikernel.autograd import values
from minikernel.tensor import Tensor

EXERCISE = "8.2"


def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffer_list: list[Optional[Tensor]],
        weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool,
        maximize: bool) -> None:
    for i, param in enumerate(params):
        theta = values.array(param)
        g = values.array(grads[i])
        g = -g if maximize else g
        if weight_decay != 0:
            g = g + weight_decay * theta
        if momentum != 0:
            if momentum_buffer_list[i] is None:
                momentum_buffer_list[i] = values.wrap(g)  # a copy
                buf = values.array(momentum_buffer_list[i])
            else:
                buf = momentum * values.array(momentum_buffer_list[i]) + (1 - dampening) * g
                momentum_buffer_list[i] = values.wrap(buf)
            g = g + momentum * buf if nesterov else buf
        theta += -lr * g
        param._bump_version()
