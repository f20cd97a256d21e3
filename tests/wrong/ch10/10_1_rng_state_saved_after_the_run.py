"""The generator state is read after run_function ran: the rerun starts where forward ended and draws another dropout mask."""
from __future__ import annotations

import torch

EXERCISE = "10.1"


def checkpoint_forward(ctx, run_function, preserve_rng_state, *args):
    ctx.run_function = run_function
    ctx.preserve_rng_state = preserve_rng_state
    ctx.inputs = [None if torch.is_tensor(a) else a for a in args]
    ctx.tensor_indices = [i for i, a in enumerate(args) if torch.is_tensor(a)]
    ctx.save_for_backward(*(a for a in args if torch.is_tensor(a)))
    with torch.no_grad():
        out = run_function(*args)
    if preserve_rng_state:
        ctx.fwd_cpu_state = torch.get_rng_state()
    return out
