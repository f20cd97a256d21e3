"""The input node's hook never resets grad_outputs: a later backward that reaches the inputs past the outputs calls the hooks again with the stale grad_outputs."""
from __future__ import annotations

from minikernel.nn.backward_hooks import BackwardHook

EXERCISE = "4.3"


def setup_input_hook(bw_hook: BackwardHook, args: tuple) -> tuple:
    def fn(grad_fn) -> None:
        def hook(grad_input, _grad_output):
            if bw_hook.grad_outputs is None:
                return None
            res = bw_hook.pack_with_none(bw_hook.input_tensors_index, grad_input, bw_hook.n_inputs)
            for user_hook in bw_hook.user_hooks:
                out = user_hook(bw_hook.module, res, bw_hook.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            return bw_hook.unpack_none(bw_hook.input_tensors_index, res)

        grad_fn.register_hook(hook)

    new_args, indices = bw_hook.apply_on_tensors(fn, args)
    bw_hook.n_inputs = len(args)
    bw_hook.input_tensors_index = indices
    return new_args
