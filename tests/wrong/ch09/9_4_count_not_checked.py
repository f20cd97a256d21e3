"""A backward that returns too many gradients is not refused: the extra ones are silently dropped."""
from __future__ import annotations

EXERCISE = "9.4"


def custom_op_backward(ctx, backward, grad):
    grads = backward(ctx, grad)
    if not isinstance(grads, tuple):
        grads = (grads,)
    return (None, None, None, *grads[:ctx.num_inputs])
