"""Forward hooks registered with always_call=True are not recorded as called."""
from __future__ import annotations

from typing import Any

import minikernel.nn.hooks as H
from minikernel.nn.hooks import ModuleCall

EXERCISE = "4.2"


def run_forward_hooks(module: Any, call: ModuleCall) -> None:
    for hook_id, hook in [*H._global_forward_hooks.items(), *module._forward_hooks.items()]:
        if hook_id in module._forward_hooks_always_called or hook_id in H._global_forward_hooks_always_called:
            pass
        if hook_id in module._forward_hooks_with_kwargs or hook_id in H._global_forward_hooks_with_kwargs:
            out = hook(module, call.args, call.kwargs, call.result)
        else:
            out = hook(module, call.args, call.result)
        if out is not None:
            call.result = out
