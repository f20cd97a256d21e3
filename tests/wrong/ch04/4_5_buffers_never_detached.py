"""module_state_dict stores the buffers themselves whatever keep_vars says ("buffers need no detaching"): state_dict() then hands out the module's own buffer objects, and a buffer that requires grad keeps requiring it."""
from __future__ import annotations

from typing import Any

EXERCISE = "4.5"


def module_state_dict(module: Any, destination: dict, prefix: str, keep_vars: bool) -> dict:
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buf
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    return destination
