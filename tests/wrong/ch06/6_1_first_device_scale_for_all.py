"""The scale is asked for once, on the first tensor's device, and used for every tensor whatever its device."""
from __future__ import annotations

from collections import abc

import torch

EXERCISE = "6.1"


def scale_outputs(outputs, scale_on):
    cache = {}

    def once(device):
        if "scale" not in cache:
            cache["scale"] = scale_on(device)
        return cache["scale"]

    return _scale(outputs, once)


def _scale(outputs, scale_on):
    if isinstance(outputs, torch.Tensor):
        return outputs * scale_on(outputs.device)
    if isinstance(outputs, abc.Iterable):
        scaled = map(lambda item: _scale(item, scale_on), outputs)
        return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
    raise ValueError("outputs must be a Tensor or an iterable of Tensors")
