"""The scale is cast to the output's dtype first: an integer output is multiplied by an integer (truncated) scale."""
from __future__ import annotations

from collections import abc

import torch

EXERCISE = "6.1"


def scale_outputs(outputs, scale_on):
    if isinstance(outputs, torch.Tensor):
        return outputs * scale_on(outputs.device).to(outputs.dtype)
    if isinstance(outputs, abc.Iterable):
        scaled = map(lambda item: scale_outputs(item, scale_on), outputs)
        return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
    raise ValueError("outputs must be a Tensor or an iterable of Tensors")
