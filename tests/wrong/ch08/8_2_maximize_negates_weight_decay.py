"""maximize negates the gradient after the weight decay is added, so the decay is negated too."""
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
        if weight_decay != 0:
            g = g + weight_decay * theta
        g = -g if maximize else g
        if momentum != 0:
            if momentum_buffer_list[i] is None:
                momentum_buffer_list[i] = values.wrap(g)  # a copy
                buf = values.array(momentum_buffer_list[i])
            else:
                buf = values.array(momentum_buffer_list[i])
                buf *= momentum
                buf += (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        theta += -lr * g
        param._bump_version()
