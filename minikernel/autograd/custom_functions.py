"""Exercise 3.8: a custom ``Function`` — the ReLU of the notes, written by hand.

``MyReLU.apply(x)`` records one ``MyReLUBackward`` node, exactly as a
``torch.autograd.Function`` subclass does in PyTorch::

    class MyReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input

Here the two static methods are the functions below (so the grader can switch
them to the reference); the class is complete.
"""
from __future__ import annotations

from ..course.exercise import exercise
from ..tensor import Tensor
from . import functions as F  # noqa: F401 - for your exercise
from .function import Function


@exercise("3.8")
def my_relu_forward(ctx, input: Tensor) -> Tensor:
    """``max(input, 0)`` element-wise; save ``input`` for backward (``ctx.save_for_backward``).

    Matches: ``torch.relu(input)``, NaN included (``relu(nan)`` is nan). ``F.relu`` would
    record nothing here anyway (forward runs under ``no_grad``), but write it with
    ``F.where``/``F.lt``: ``F.where(F.lt(input, 0), 0.0, input)`` keeps a NaN, while
    ``F.where(F.gt(input, 0), input, 0.0)`` would turn it into 0 (``nan > 0`` is False).
    """
    # TODO(3.8): ≈2 lines
    raise NotImplementedError("exercise 3.8 (my_relu_forward) is not implemented yet")


@exercise("3.8")
def my_relu_backward(ctx, grad_output: Tensor) -> Tensor:
    """The gradient is 0 where ``input <= 0`` and passes elsewhere:
    ``F.where(F.le(input, 0), 0.0, grad_output)``.

    Matches: the gradient of ``torch.relu`` (``threshold_backward``): 0 at exactly 0, and
    at NaN the gradient passes (``nan <= 0`` is False), as PyTorch's.
    """
    # TODO(3.8): ≈2 lines
    raise NotImplementedError("exercise 3.8 (my_relu_backward) is not implemented yet")


class MyReLU(Function):
    """ReLU as a custom Function: ``MyReLU.apply(x)``."""

    forward = staticmethod(my_relu_forward)
    backward = staticmethod(my_relu_backward)
