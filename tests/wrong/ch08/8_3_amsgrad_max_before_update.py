"""AMSGrad keeps the maximum of the *previous* second moment: the max is taken before ``v`` is updated."""
from __future__ import annotations

import numpy as np

from minikernel.autograd import values

EXERCISE = "8.3"


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize, decoupled_weight_decay):
    for i, param in enumerate(params):
        theta = values.array(param)
        g = values.array(grads[i])
        g = -g if maximize else g
        m, v = values.array(exp_avgs[i]), values.array(exp_avg_sqs[i])
        step_t = values.array(state_steps[i])
        step_t += 1
        step = float(step_t)
        if weight_decay != 0:
            if decoupled_weight_decay:
                theta *= 1 - lr * weight_decay
            else:
                g = g + weight_decay * theta
        m += (1 - beta1) * (g - m)
        if amsgrad:
            np.maximum(values.array(max_exp_avg_sqs[i]), v, out=values.array(max_exp_avg_sqs[i]))
        v *= beta2
        v += (1 - beta2) * g * g
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if amsgrad:
            vmax = values.array(max_exp_avg_sqs[i])
            denom = np.sqrt(vmax) / bias_correction2_sqrt + eps
        else:
            denom = np.sqrt(v) / bias_correction2_sqrt + eps
        theta += -step_size * (m / denom)
        param._bump_version()
