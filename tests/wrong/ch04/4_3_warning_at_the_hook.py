"""The no-input-grad warning is given with stacklevel=1 (the default): it points at the hook's own line instead of past the engine (torch: the line that called backward())."""
from __future__ import annotations

import warnings
from typing import Any

from minikernel.nn.backward_hooks import NO_INPUT_GRAD_WARNING, BackwardHook

EXERCISE = "4.3"


def setup_output_hook(bw_hook: BackwardHook, outputs: Any) -> Any:
    def fn(grad_fn) -> None:
        def hook(_grad_input, grad_output):
            bw_hook.grad_outputs = bw_hook.pack_with_none(bw_hook.output_tensors_index, grad_output,
                                                          bw_hook.n_outputs)
            expected = len(bw_hook.grad_outputs)
            for pre_hook in bw_hook.user_pre_hooks:
                replaced = pre_hook(bw_hook.module, bw_hook.grad_outputs)
                if replaced is None:
                    continue
                if len(replaced) != expected:
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                       f"got {len(replaced)}, but expected {expected}")
                bw_hook.grad_outputs = replaced
            local = bw_hook.grad_outputs
            if bw_hook.input_tensors_index is None:
                warnings.warn(NO_INPUT_GRAD_WARNING, stacklevel=1)  # the default: the hook's own line
                grad_inputs = bw_hook.pack_with_none([], [], bw_hook.n_inputs)
                for user_hook in bw_hook.user_hooks:
                    res = user_hook(bw_hook.module, grad_inputs, bw_hook.grad_outputs)
                    if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
                bw_hook.grad_outputs = None
            if local is not None:
                return tuple(local[i] for i in bw_hook.output_tensors_index)
            return None

        grad_fn.register_hook(hook)

    single = not isinstance(outputs, tuple)
    as_tuple = (outputs,) if single else outputs
    new, indices = bw_hook.apply_on_tensors(fn, as_tuple)
    bw_hook.n_outputs = len(as_tuple)
    bw_hook.output_tensors_index = indices
    return new[0] if single else new
