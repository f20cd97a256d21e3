"""my_relu_backward passes grad_output through unmasked."""
from __future__ import annotations

from minikernel.tensor import Tensor

EXERCISE = "3.8"


def my_relu_backward(ctx, grad_output: Tensor) -> Tensor:
    (_input,) = ctx.saved_tensors
    return grad_output
