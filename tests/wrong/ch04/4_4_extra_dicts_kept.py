"""remove() deletes the hook from its main dictionary only, not from the extra ones (kwargs, always_call)."""
from __future__ import annotations

from minikernel.nn.hooks import RemovableHandle

EXERCISE = "4.4"


def remove_hook(handle: RemovableHandle) -> None:
    for ref in (handle.hooks_dict_ref,):
        hooks = ref()
        if hooks is not None and handle.id in hooks:
            del hooks[handle.id]
