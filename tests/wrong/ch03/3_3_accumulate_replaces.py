"""accumulate_grad assigns the new gradient instead of adding it to .grad."""
from __future__ import annotations

from collections.abc import Sequence

from minikernel.autograd.grad_mode import is_grad_enabled
from minikernel.tensor import Tensor

EXERCISE = "3.3"

Tensors = Tensor | Sequence[Tensor]


def accumulate_grad(variable: Tensor, grad: Tensor) -> None:
    recording = is_grad_enabled()
    if variable.grad is None:
        variable.grad = grad if recording else grad.detach().clone()
    elif recording:
        variable.grad = grad
    else:
        variable.grad = grad.detach().clone()
