"""The step count is read and incremented locally, never written back into state_steps: every step corrects its bias as the first."""
from __future__ import annotations

import numpy as np

from minikernel.autograd import values
from minikernel.tensor import Tensor

EXERCISE = "8.3"


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
         max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], amsgrad: bool, beta1: float, beta2: float,
         lr: float, weight_decay: float, eps: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    for i, param in enumerate(params):
        theta = values.array(param)
        g = values.array(grads[i])
        g = -g if maximize else g
        m, v = values.array(exp_avgs[i]), values.array(exp_avg_sqs[i])
        step_t = values.array(state_steps[i])
        step = float(step_t) + 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                theta *= 1 - lr * weight_decay
            else:
                g = g + weight_decay * theta
        m += (1 - beta1) * (g - m)  # m.lerp_(g, 1 - beta1)
        v *= beta2
        v += (1 - beta2) * g * g
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if amsgrad:
            vmax = values.array(max_exp_avg_sqs[i])
            np.maximum(vmax, v, out=vmax)
            denom = np.sqrt(vmax) / bias_correction2_sqrt + eps
        else:
            denom = np.sqrt(v) / bias_correction2_sqrt + eps
        theta += -step_size * (m / denom)
        param._bump_version()
