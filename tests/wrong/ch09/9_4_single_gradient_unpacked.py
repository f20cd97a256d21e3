"""A single gradient is unpacked as if it were a tuple: its elements become the inputs' gradients."""
from __future__ import annotations

EXERCISE = "9.4"


def custom_op_backward(ctx, backward, grad):
    grads = tuple(backward(ctx, grad))
    return (None, None, None, *grads)
