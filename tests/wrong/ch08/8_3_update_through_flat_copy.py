"""The update is applied to ``theta.reshape(-1)``: a non-contiguous parameter is copied and never changes."""
from __future__ import annotations

import numpy as np

from minikernel.autograd import values

EXERCISE = "8.3"


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize, decoupled_weight_decay):
    for i, param in enumerate(params):
        theta = values.array(param).reshape(-1)
        g = values.array(grads[i]).reshape(-1)
        g = -g if maximize else g
        m, v = values.array(exp_avgs[i]).reshape(-1), values.array(exp_avg_sqs[i]).reshape(-1)
        step_t = values.array(state_steps[i])
        step_t += 1
        step = float(step_t)
        if weight_decay != 0:
            if decoupled_weight_decay:
                theta *= 1 - lr * weight_decay
            else:
                g = g + weight_decay * theta
        m += (1 - beta1) * (g - m)
        v *= beta2
        v += (1 - beta2) * g * g
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if amsgrad:
            vmax = values.array(max_exp_avg_sqs[i]).reshape(-1)
            np.maximum(vmax, v, out=vmax)
            denom = np.sqrt(vmax) / bias_correction2_sqrt + eps
        else:
            denom = np.sqrt(v) / bias_correction2_sqrt + eps
        theta += -step_size * (m / denom)
        param._bump_version()
