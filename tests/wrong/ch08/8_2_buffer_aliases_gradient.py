"""The first momentum buffer is the gradient itself, not a copy."""
from __future__ import annotations

from minikernel.autograd import values
from minikernel.tensor import Tensor

EXERCISE = "8.2"


def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffer_list: list[Tensor | None],
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
                momentum_buffer_list[i] = grads[i]
                buf = values.array(momentum_buffer_list[i])
            else:
                buf = values.array(momentum_buffer_list[i])
                buf *= momentum
                buf += (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        theta += -lr * g
        param._bump_version()
