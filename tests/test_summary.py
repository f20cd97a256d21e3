"""minikernel.utils.summary: rows from forward hooks; oracle: the modules' own parameters and outputs."""
from __future__ import annotations

import pytest
import torch

from minikernel.utils.summary import summary


class Twice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.head = torch.nn.Sequential(torch.nn.Conv1d(1, 2, 3), torch.nn.Flatten())

    def forward(self, x):
        return self.head(self.fc(self.fc(x)).unsqueeze(1))


def test_rows_follow_the_calls_and_totals_count_shared_parameters_once():
    model = Twice()
    model.head[0].weight.requires_grad_(False)
    s = summary(model, torch.zeros(5, 4))
    assert [r.name for r in s.rows] == ["fc", "fc", "head.0", "head.1"]
    assert s.rows[2].output_shape == tuple(model.head[0](torch.zeros(5, 1, 4)).shape)
    assert s.rows[0].params == model.fc.weight.numel() + model.fc.bias.numel()
    assert s.total_params == sum(p.numel() for p in model.parameters())
    assert s.trainable_params == s.total_params - model.head[0].weight.numel()
    text = str(s)
    assert text.splitlines()[0].split() == ["layer", "type", "output", "shape", "params"]
    assert f"total params: {s.total_params}" in text


def test_hooks_are_removed_and_grad_mode_restored():
    model = Twice()
    summary(model, torch.zeros(1, 4))
    assert all(not m._forward_hooks for m in model.modules())
    assert torch.is_grad_enabled()


def test_not_a_module():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        summary(lambda x: x, torch.zeros(1))
