"""my_relu_backward lets the gradient through at 0 (>= instead of >)."""
from __future__ import annotations

from minikernel.autograd import functions as F
from minikernel.tensor import Tensor

EXERCISE = "3.8"


def my_relu_backward(ctx, grad_output: Tensor) -> Tensor:
    (input,) = ctx.saved_tensors
    return F.mul(grad_output, F.ge(input, 0))
