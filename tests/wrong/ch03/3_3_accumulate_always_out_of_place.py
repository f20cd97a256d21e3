"""accumulate_grad always adds out of place (variable.grad = variable.grad + grad): without create_graph torch adds in place, and a reference to .grad taken earlier sees the sum."""
from __future__ import annotations

from minikernel.autograd.grad_mode import is_grad_enabled
from minikernel.tensor import Tensor

EXERCISE = "3.3"


def accumulate_grad(variable: Tensor, grad: Tensor) -> None:
    if variable.grad is None:
        variable.grad = grad if is_grad_enabled() else grad.detach().clone()
    else:
        variable.grad = variable.grad + grad
