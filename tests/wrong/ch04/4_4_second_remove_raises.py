"""Calling remove() twice raises KeyError instead of doing nothing."""
from __future__ import annotations

from minikernel.nn.hooks import RemovableHandle

EXERCISE = "4.4"


def remove_hook(handle: RemovableHandle) -> None:
    for ref in (handle.hooks_dict_ref, *handle.extra_dict_ref):
        hooks = ref()
        if hooks is not None:
            del hooks[handle.id]
