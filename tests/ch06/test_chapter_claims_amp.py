"""Chapter 06's sentences about what autocast keeps for backward, checked against torch.

Oracle: the saved tensors themselves, seen by ``torch.autograd.graph.saved_tensors_hooks``.
"""
from __future__ import annotations

import torch


def _saved_under_autocast(input_requires_grad: bool) -> list[torch.Tensor]:
    layer = torch.nn.Linear(64, 32)
    x = torch.randn(8, 64, requires_grad=input_requires_grad)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t), \
            torch.autocast("cpu", torch.bfloat16):
        layer(x)
    return saved


def test_a_linear_under_autocast_saves_a_bfloat16_weight_copy_only_when_its_input_needs_a_gradient():
    without = _saved_under_autocast(False)
    assert [(tuple(t.shape), t.dtype) for t in without] == [((8, 64), torch.bfloat16)]  # the input only
    shapes = sorted((tuple(t.shape), t.dtype) for t in _saved_under_autocast(True))
    assert shapes == [((8, 64), torch.bfloat16), ((64, 32), torch.bfloat16)]  # input, and the weight's copy (transposed)


def test_the_saved_weight_copy_is_new_memory_not_the_float32_parameter():
    layer = torch.nn.Linear(64, 32)
    x = torch.randn(8, 64, requires_grad=True)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t), \
            torch.autocast("cpu", torch.bfloat16):
        layer(x)
    weight_ptr = layer.weight.untyped_storage().data_ptr()
    assert all(t.untyped_storage().data_ptr() != weight_ptr for t in saved)
    copy = next(t for t in saved if t.shape == (64, 32))
    torch.testing.assert_close(copy.t().float(), layer.weight.detach().bfloat16().float(), rtol=0, atol=0)
