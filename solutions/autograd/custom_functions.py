"""Reference bodies for minikernel/autograd/custom_functions.py (exercise 3.8)."""
from __future__ import annotations

import minikernel.autograd.functions as F
from minikernel.tensor import Tensor


def my_relu_forward(ctx, input: Tensor) -> Tensor:
    ctx.save_for_backward(input)
    return F.where(F.lt(input, 0), 0.0, input)  # keeps NaN, like torch.relu


def my_relu_backward(ctx, grad_output: Tensor) -> Tensor:
    (input,) = ctx.saved_tensors
    return F.where(F.le(input, 0), 0.0, grad_output)  # passes at NaN, like torch's threshold_backward
