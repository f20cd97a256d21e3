"""The update is applied to ``theta.reshape(-1)``: a non-contiguous parameter is copied and never changes."""
from __future__ import annotations

from minikernel.autograd import values

EXERCISE = "8.2"


def sgd(params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize):
    for i, param in enumerate(params):
        theta = values.array(param).reshape(-1)
        g = values.array(grads[i]).reshape(-1)
        g = -g if maximize else g
        if weight_decay != 0:
            g = g + weight_decay * theta
        if momentum != 0:
            if momentum_buffer_list[i] is None:
                momentum_buffer_list[i] = values.wrap(g.reshape(values.array(grads[i]).shape))
                buf = values.array(momentum_buffer_list[i]).reshape(-1)
            else:
                buf = values.array(momentum_buffer_list[i]).reshape(-1)
                buf *= momentum
                buf += (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        theta += -lr * g
        param._bump_version()
