"""Chapter 08's DataLoader and saving examples (minikernel/data.py, minikernel/saving.py):
they behave as the notebook says. No exercise: these pass in both modes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from minikernel import data, saving


def test_the_notes_dataset_and_batch_sampler():
    assert [a.tolist() for a in (data.NegatedPairs(3)[i] for i in range(3))] == [[0, 0], [-2, -2], [-4, -4]]
    seen = []
    loader = DataLoader(data.NegatedPairs(10), batch_sampler=data.NeighbourBatches(3),
                        collate_fn=lambda samples: seen.append(samples) or samples)
    assert [[s.tolist() for s in b] for b in loader] == [[[0, 0], [-2, -2]], [[-2, -2], [-4, -4]], [[-4, -4], [-6, -6]]]
    assert all(isinstance(s, np.ndarray) for b in seen for s in b), "collate_fn receives samples, not indices"
    with pytest.raises(TypeError, match="has no len"):
        len(loader)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(data.NegatedPairs(10), batch_sampler=data.NeighbourBatches(3), batch_size=2)


def test_workers_split_an_iterable_dataset_only_with_worker_init_fn():
    plain = sorted(DataLoader(data.RangeStream(0, 5), batch_size=None, num_workers=2))
    split = sorted(DataLoader(data.RangeStream(0, 5), batch_size=None, num_workers=2,
                              worker_init_fn=data.split_range_per_worker))
    assert plain == sorted(list(range(5)) * 2) and split == list(range(5))


def test_who_loaded_me_in_the_main_process_and_in_workers():
    assert data.WhoLoadedMe(2)[1][:2] == (1, -1)
    torch.manual_seed(0)
    samples = [s for b in DataLoader(data.WhoLoadedMe(4), batch_size=2, num_workers=2, collate_fn=list) for s in b]
    assert sorted((i, w) for i, w, _ in samples) == [(0, 0), (1, 0), (2, 1), (3, 1)]


def test_decision_gate_trace_loses_the_branch_script_keeps_it():
    x_pos, x_neg = torch.ones(2), -torch.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(saving.DecisionGate(), x_pos)
        scripted = torch.jit.script(saving.DecisionGate())
    assert saving.DecisionGate()(x_neg).tolist() == scripted(x_neg).tolist() == [1.0, 1.0]
    assert traced(x_neg).tolist() == [-1.0, -1.0]
    assert saving.MyModule()(torch.zeros(2, 3)).shape == (2, 3)


def eager_rnn(loop: saving.MyRNNLoop, xs: torch.Tensor) -> torch.Tensor:
    """WrapRNN's computation written out in eager torch, from the traced cell's own weights."""
    linear = loop.cell.linear
    h = torch.zeros(3, 4)
    for x in xs:
        z = torch.nn.functional.linear(x, linear.weight, linear.bias)
        h = torch.tanh((z if z.sum() > 0 else -z) + h)
    return torch.relu(h)


def test_the_notes_nested_rnn_keeps_its_loop_and_its_branch_through_save_and_load(tmp_path):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        wrapped = torch.jit.trace(saving.WrapRNN(), torch.rand(10, 3, 4))
        wrapped.save(str(tmp_path / "wrapped_rnn.pt"))
        loaded = torch.jit.load(str(tmp_path / "wrapped_rnn.pt"))
    assert "prim::Loop" in str(wrapped.loop.graph) and "if " in wrapped.loop.cell.dg.code
    for steps, sign in ((10, 1.0), (7, 1.0), (3, -1.0)):   # other lengths and the other branch
        xs = sign * torch.rand(steps, 3, 4)
        expected = eager_rnn(wrapped.loop, xs)
        assert torch.allclose(wrapped(xs), expected, atol=1e-6)
        assert torch.allclose(loaded(xs), expected, atol=1e-6)


def test_cond_gate_exports_both_branches_and_decision_gate_does_not():
    x_pos, x_neg = torch.tensor([1.0, 2.0]), torch.tensor([-1.0, -3.0])
    exported = torch.export.export(saving.CondGate(), (x_pos,)).module()
    for x in (x_pos, x_neg):
        assert torch.equal(exported(x), saving.DecisionGate()(x))
    with pytest.raises(Exception, match="data-dependent"):
        torch.export.export(saving.DecisionGate(), (x_pos,))
