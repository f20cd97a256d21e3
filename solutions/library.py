"""Reference solution for exercise 9.4 (``minikernel/library.py``)."""
from __future__ import annotations

from typing import Any, Callable, Optional

from minikernel import dispatch
from minikernel.dispatch import Operator
from minikernel.tensor import Tensor


def custom_op_forward(ctx: Any, op: Operator, keys: Any, setup_context: Optional[Callable], *args: Any) -> Any:
    output = dispatch.redispatch(op, keys, *args)
    if setup_context is not None:
        setup_context(ctx, args, output)
    ctx.num_inputs = len(args)
    return output


def custom_op_backward(ctx: Any, backward: Callable, grad: Tensor) -> tuple:
    grads = backward(ctx, grad)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != ctx.num_inputs:
        raise RuntimeError(f"backward returned {len(grads)} gradient(s) but the op has {ctx.num_inputs} "
                           f"input(s): return one per input (None where there is none)")
    return (None, None, None, *grads)
