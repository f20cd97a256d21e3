"""The forward calls the op from the top instead of redispatching below Autograd: the autograd layer runs twice."""
from __future__ import annotations

from minikernel import dispatch

EXERCISE = "9.4"


def custom_op_forward(ctx, op, keys, setup_context, *args):
    output = dispatch.call(op, *args)
    if setup_context is not None:
        setup_context(ctx, args, output)
    ctx.num_inputs = len(args)
    return output
