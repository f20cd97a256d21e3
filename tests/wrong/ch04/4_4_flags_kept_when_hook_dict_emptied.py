"""remove() returns as soon as the hook dict is gone or no longer holds the id (after module._forward_hooks.clear()), without cleaning the flag dicts."""
EXERCISE = "4.4"


def remove_hook(handle):
    hooks = handle.hooks_dict_ref()
    if hooks is None or handle.id not in hooks:
        return
    del hooks[handle.id]
    for ref in handle.extra_dict_ref:
        extra = ref()
        if extra is not None and handle.id in extra:
            del extra[handle.id]
