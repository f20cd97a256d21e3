"""Exercise 4.5: a checkpoint key that names a non-persistent buffer. The buffer is not part of
the state, so loading reports the key as unexpected (and leaves the buffer as it is). And a
one-element 1-D checkpoint value, which loads into a 0-d parameter or buffer.

Oracle: the same module on ``torch.nn.Module``, ``load_state_dict(..., strict=False)``.
"""
from __future__ import annotations

import pytest
import torch

from tests.ch04.twins import FRAMEWORKS


def _with_buffers(fw):
    module = fw.nn.Module()
    module.register_buffer("kept", fw.tensor(torch.zeros(2)))
    module.register_buffer("scratch", fw.tensor(torch.zeros(2)), persistent=False)
    return module


@pytest.mark.exercise("4.5")
def test_a_key_naming_a_non_persistent_buffer_is_unexpected_like_torch():
    reports = {}
    for fw in FRAMEWORKS:
        module = _with_buffers(fw)
        checkpoint = {"kept": fw.tensor(torch.ones(2)), "scratch": fw.tensor(torch.full((2,), 7.0))}
        result = module.load_state_dict(checkpoint, strict=False)
        reports[fw.name] = (list(result.missing_keys), list(result.unexpected_keys),
                            fw.numpy(module.kept).tolist(), fw.numpy(module.scratch).tolist())
    assert reports["torch"] == ([], ["scratch"], [1.0, 1.0], [0.0, 0.0])
    assert reports["minikernel"] == reports["torch"]


@pytest.mark.exercise("4.5")
@pytest.mark.parametrize("kind", ["parameter", "buffer"])
def test_a_one_element_value_loads_into_a_0d_entry_like_torch(kind):
    # Old checkpoints stored scalars as shape (1,): torch reads such a value into a 0-d
    # parameter or buffer (as_checkpoint_shape), where comparing shapes first would refuse it.
    reports = {}
    for fw in FRAMEWORKS:
        module = fw.nn.Module()
        if kind == "parameter":
            module.register_parameter("scale", fw.param(torch.tensor(1.0)))
        else:
            module.register_buffer("scale", fw.tensor(torch.tensor(1.0)))
        result = module.load_state_dict({"scale": fw.tensor(torch.tensor([5.0]))}, strict=False)
        reports[fw.name] = (list(result.missing_keys), list(result.unexpected_keys), tuple(module.scale.shape),
                            fw.numpy(module.scale).tolist())
    assert reports["torch"] == ([], [], (), 5.0)
    assert reports["minikernel"] == reports["torch"]
