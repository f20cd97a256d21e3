"""setup_context is never called: backward finds nothing saved."""
from __future__ import annotations

from minikernel import dispatch

EXERCISE = "9.4"


def custom_op_forward(ctx, op, keys, setup_context, *args):
    ctx.num_inputs = len(args)
    return dispatch.redispatch(op, keys, *args)
