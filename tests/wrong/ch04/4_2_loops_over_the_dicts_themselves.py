"""The pre-hooks are run straight from the dicts (itertools.chain of their items): a hook that removes or adds a hook during the call makes the loop raise "mutated during iteration"."""
from __future__ import annotations

import itertools
from typing import Any

import minikernel.nn.hooks as H
from minikernel.nn.hooks import ModuleCall

EXERCISE = "4.2"


def run_forward_pre_hooks(module: Any, call: ModuleCall) -> None:
    for hook_id, hook in itertools.chain(H._global_forward_pre_hooks.items(), module._forward_pre_hooks.items()):
        if hook_id in module._forward_pre_hooks_with_kwargs:
            result = hook(module, call.args, call.kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                call.args, call.kwargs = result
        else:
            result = hook(module, call.args)
            if result is not None:
                call.args = result if isinstance(result, tuple) else (result,)
