"""The refusal of a wrong count does not say how many gradients backward must return."""
from __future__ import annotations

EXERCISE = "9.4"


def custom_op_backward(ctx, backward, grad):
    grads = backward(ctx, grad)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != ctx.num_inputs:
        raise RuntimeError("backward returned the wrong number of gradients")
    return (None, None, None, *grads)
