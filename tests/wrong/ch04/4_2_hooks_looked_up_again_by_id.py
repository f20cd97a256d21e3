"""The loop goes over a list of ids made first, but looks each hook up again in the dicts: a hook removed earlier in the same call is skipped, where torch still runs it (it holds the hook itself)."""
from __future__ import annotations

from typing import Any

import minikernel.nn.hooks as H
from minikernel.nn.hooks import ModuleCall

EXERCISE = "4.2"


def run_forward_hooks(module: Any, call: ModuleCall) -> None:
    for hook_id in [*H._global_forward_hooks, *module._forward_hooks]:
        hook = H._global_forward_hooks.get(hook_id) or module._forward_hooks.get(hook_id)
        if hook is None:  # removed meanwhile
            continue
        if hook_id in module._forward_hooks_always_called or hook_id in H._global_forward_hooks_always_called:
            call.called.add(hook_id)
        if hook_id in module._forward_hooks_with_kwargs or hook_id in H._global_forward_hooks_with_kwargs:
            out = hook(module, call.args, call.kwargs, call.result)
        else:
            out = hook(module, call.args, call.result)
        if out is not None:
            call.result = out
