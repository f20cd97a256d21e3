"""Exercise 4.5 edge cases: what ``state_dict(keep_vars=...)`` holds for parameters and buffers.

``keep_vars=True`` gives the module's own tensors (the very objects); ``keep_vars=False``
gives detached tensors: new objects over the same memory, with no gradient
requirement. Buffers included: a buffer may require grad too.
"""
from __future__ import annotations

import pytest
import torch

from tests.ch04.twins import FRAMEWORKS


def _module(fw):
    module = fw.nn.Module()
    module.register_parameter("w", fw.param(torch.ones(2, 3)))
    module.register_buffer("steps", fw.tensor(torch.zeros(2)))
    module.register_buffer("tracked", fw.tensor(torch.full((3,), 0.5), requires_grad=True))
    child = fw.nn.Module()
    child.register_buffer("mean", fw.tensor(torch.arange(3.0)))
    child.register_parameter("b", fw.param(torch.zeros(3)))
    module.add_module("child", child)
    return module


def _owner(module, key):
    *path, name = key.split(".")
    for part in path:
        module = module._modules[part]
    return (module._parameters if name in module._parameters else module._buffers)[name]


@pytest.mark.exercise("4.5")
@pytest.mark.parametrize("keep_vars", [False, True])
def test_keep_vars_for_parameters_and_buffers(keep_vars):
    seen = {}
    for fw in FRAMEWORKS:
        module = _module(fw)
        state = module.state_dict(keep_vars=keep_vars)
        seen[fw.name] = [(key, value is _owner(module, key), value.requires_grad) for key, value in state.items()]
    assert seen["minikernel"] == seen["torch"], (
        f"state_dict(keep_vars={keep_vars}): (key, is the module's own tensor, requires_grad) per entry: "
        f"yours {seen['minikernel']}, torch's {seen['torch']}")
