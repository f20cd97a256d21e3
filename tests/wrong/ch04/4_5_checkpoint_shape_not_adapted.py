"""load_state_dict compares shapes without as_checkpoint_shape: a one-element 1-D checkpoint value for a 0-d parameter is reported as a size mismatch instead of loaded."""
from __future__ import annotations

EXERCISE = "4.5"

from minikernel.nn.state import copy_values, size_text
from minikernel.tensor import Tensor


def load_from_state_dict(module, state_dict, prefix, missing_keys, unexpected_keys, error_msgs):
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
