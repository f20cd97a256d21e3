"""A checkpoint key naming a non-persistent buffer is not reported unexpected: the check looks at every buffer."""
from __future__ import annotations

from typing import Any, Mapping

from minikernel.nn.state import as_checkpoint_shape, copy_values, size_text
from minikernel.tensor import Tensor

EXERCISE = "4.5"


def module_state_dict(module: Any, destination: dict, prefix: str, keep_vars: bool) -> dict:
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    return destination


def load_from_state_dict(module: Any, state_dict: Mapping[str, Any], prefix: str, missing_keys: list,
                         unexpected_keys: list, error_msgs: list) -> None:
    persistent = {k: v for k, v in module._buffers.items() if k not in module._non_persistent_buffers_set}
    local_state = {k: v for k, v in [*module._parameters.items(), *persistent.items()] if v is not None}
    for name, tensor in local_state.items():
        key = prefix + name
        if key not in state_dict:
            missing_keys.append(key)
            continue
        value = state_dict[key]
        if not isinstance(value, Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected minikernel.Tensor or '
                              f"Tensor-like object from checkpoint but received {type(value)}")
            continue
        value = as_checkpoint_shape(tensor, value)
        if value.shape != tensor.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape {size_text(value.shape)} "
                              f"from checkpoint, the shape in current model is {size_text(tensor.shape)}.")
        else:
            copy_values(tensor, value)
    for key in state_dict:
        if key.startswith(prefix):
            head = key[len(prefix):].split(".", 1)
            if len(head) > 1:
                if head[0] not in module._modules:
                    unexpected_keys.append(key)
            elif head[0] not in local_state and head[0] not in module._buffers:
                unexpected_keys.append(key)
