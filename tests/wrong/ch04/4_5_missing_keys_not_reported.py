"""load_state_dict skips absent keys without reporting them as missing."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikernel.nn.state import as_checkpoint_shape, copy_values, size_text
from minikernel.tensor import Tensor

EXERCISE = "4.5"


def load_from_state_dict(module: Any, state_dict: Mapping[str, Any], prefix: str, missing_keys: list,
                         unexpected_keys: list, error_msgs: list) -> None:
    persistent = {k: v for k, v in module._buffers.items() if k not in module._non_persistent_buffers_set}
    local_state = {k: v for k, v in [*module._parameters.items(), *persistent.items()] if v is not None}
    for name, tensor in local_state.items():
        key = prefix + name
        if key not in state_dict:
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
            elif head[0] not in local_state:
                unexpected_keys.append(key)
