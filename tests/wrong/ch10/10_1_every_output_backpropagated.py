"""Backward runs through every tensor output, also those that need no gradient: a mix of such outputs raises."""
from __future__ import annotations

import torch

EXERCISE = "10.1"


def checkpoint_backward(ctx, *grad_outputs):
    inputs = list(ctx.inputs)
    for i, saved in zip(ctx.tensor_indices, ctx.saved_tensors):
        inputs[i] = saved.detach().requires_grad_(saved.requires_grad)
    with torch.random.fork_rng(devices=[], enabled=ctx.preserve_rng_state):
        if ctx.preserve_rng_state:
            torch.set_rng_state(ctx.fwd_cpu_state)
        with torch.enable_grad():
            outputs = ctx.run_function(*inputs)
    if torch.is_tensor(outputs):
        outputs = (outputs,)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if torch.is_tensor(o)]
    torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
    return (None, None, *(x.grad if torch.is_tensor(x) else None for x in inputs))
