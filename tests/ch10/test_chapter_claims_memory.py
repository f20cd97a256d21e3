"""Chapter 10's sentences about saved tensors and the checkpoint warning, checked against torch.

Oracle: the saved tensors seen by ``torch.autograd.graph.saved_tensors_hooks`` (by
storage address) and the warning text torch itself issues.
"""
from __future__ import annotations

import warnings

import torch
import torch.utils.checkpoint as torch_ckpt


def _saved_ptrs(fn, *args) -> list[int]:
    ptrs = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: ptrs.append(t.untyped_storage().data_ptr()) or t,
                                                  lambda t: t):
        fn(*args)
    return ptrs


def test_linear_saves_its_weight_only_when_the_gradient_goes_on_to_its_input():
    layer = torch.nn.Linear(8, 4)
    weight = layer.weight.untyped_storage().data_ptr()
    assert weight not in _saved_ptrs(layer, torch.randn(3, 8))
    assert weight in _saved_ptrs(layer, torch.randn(3, 8, requires_grad=True))


def test_an_out_of_place_leaky_relu_saves_its_input_and_an_in_place_one_its_output():
    z = torch.randn(4, 5, requires_grad=True) * 1.0  # a non-leaf, so the in-place op is allowed
    out = []
    ptrs = _saved_ptrs(lambda t: out.append(torch.nn.functional.leaky_relu(t, 0.1)), z)
    assert ptrs == [z.untyped_storage().data_ptr()] and out[0].untyped_storage().data_ptr() not in ptrs
    z2 = torch.randn(4, 5, requires_grad=True) * 1.0
    out2 = []
    ptrs2 = _saved_ptrs(lambda t: out2.append(torch.nn.functional.leaky_relu_(t, 0.1)), z2)
    assert ptrs2 == [out2[0].untyped_storage().data_ptr()]


def test_the_checkpoint_warning_still_promises_an_exception_from_2_9_and_only_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch_ckpt.checkpoint(torch.sin, torch.randn(3, requires_grad=True))
    messages = [str(w.message) for w in caught]
    assert any("use_reentrant parameter should be passed explicitly" in m and "2.9" in m for m in messages)
