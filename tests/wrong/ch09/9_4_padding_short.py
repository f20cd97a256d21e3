"""Only op and keys are padded with None: every gradient lands one argument too early."""
from __future__ import annotations

EXERCISE = "9.4"


def custom_op_backward(ctx, backward, grad):
    grads = backward(ctx, grad)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != ctx.num_inputs:
        raise RuntimeError("backward must return one gradient per input")
    return (None, None, *grads, None)
