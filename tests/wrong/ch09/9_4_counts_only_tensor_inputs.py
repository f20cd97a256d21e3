"""Only tensor arguments are counted as inputs: an op with a number argument refuses its own gradients."""
from __future__ import annotations

from minikernel import dispatch
from minikernel.tensor import Tensor

EXERCISE = "9.4"


def custom_op_forward(ctx, op, keys, setup_context, *args):
    output = dispatch.redispatch(op, keys, *args)
    if setup_context is not None:
        setup_context(ctx, args, output)
    ctx.num_inputs = sum(isinstance(a, Tensor) for a in args)
    return output
