"""A with-kwargs pre-hook may return any pair: a list [args, kwargs] is accepted, where torch refuses all but a tuple."""
from __future__ import annotations

from typing import Any

import minikernel.nn.hooks as H
from minikernel.nn.hooks import ModuleCall, RemovableHandle

EXERCISE = "4.2"


def remove_hook(handle: RemovableHandle) -> None:
    for ref in (handle.hooks_dict_ref, *handle.extra_dict_ref):
        hooks = ref()
        if hooks is not None and handle.id in hooks:
            del hooks[handle.id]


def run_forward_pre_hooks(module: Any, call: ModuleCall) -> None:
    for hook_id, hook in [*H._global_forward_pre_hooks.items(), *module._forward_pre_hooks.items()]:
        if hook_id in module._forward_pre_hooks_with_kwargs:
            result = hook(module, call.args, call.kwargs)
            if result is not None:
                if len(result) != 2:
                    raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                call.args, call.kwargs = result
        else:
            result = hook(module, call.args)
            if result is not None:
                call.args = result if isinstance(result, tuple) else (result,)


def run_forward_hooks(module: Any, call: ModuleCall) -> None:
    for hook_id, hook in [*H._global_forward_hooks.items(), *module._forward_hooks.items()]:
        if hook_id in module._forward_hooks_always_called or hook_id in H._global_forward_hooks_always_called:
            call.called.add(hook_id)
        if hook_id in module._forward_hooks_with_kwargs or hook_id in H._global_forward_hooks_with_kwargs:
            out = hook(module, call.args, call.kwargs, call.result)
        else:
            out = hook(module, call.args, call.result)
        if out is not None:
            call.result = out
