"""DataParallel's four steps on CPU (complete code): torch is the oracle.

The gathered output and the gradients equal the module on the whole batch;
``scatter`` cuts like ``torch.chunk``; BatchNorm normalises each piece with its own
statistics and updates the running ones from the first piece only (torch's
broadcast gives the first device the original buffers).
"""
from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from minikernel.distributed import data_parallel as mkdp


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))


@pytest.mark.parametrize("rows, devices", [(30, 3), (5, 4), (7, 2), (1, 3)])
def test_scatter_is_torch_chunk(rows, devices):
    x = torch.randn(rows, 2)
    got = mkdp.scatter(x, devices)
    want = x.chunk(devices)
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))


def test_scatter_rebuilds_tuples_and_dicts():
    x, y = torch.arange(6), torch.arange(6, 12)
    pieces = mkdp.scatter((x, {"y": y, "flag": True}), 3)
    assert [p[0].tolist() for p in pieces] == [c.tolist() for c in x.chunk(3)]
    assert [p[1]["y"].tolist() for p in pieces] == [c.tolist() for c in y.chunk(3)]
    assert all(p[1]["flag"] is True for p in pieces)


@pytest.mark.parametrize("devices", [1, 2, 3])
def test_output_and_gradients_equal_the_whole_batch(devices):
    model = _model()
    reference = copy.deepcopy(model)
    x = torch.randn(10, 6)
    out = mkdp.DataParallel(model, devices)(x)
    want = reference(x)
    torch.testing.assert_close(out, want)
    out.pow(2).mean().backward()
    want.pow(2).mean().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


def test_replicas_hold_differentiable_copies_not_parameters():
    model = _model()
    replicas = mkdp.replicate(model, 2)
    for replica in replicas:
        assert list(replica.parameters()) == []
        w = replica[0].weight
        assert not w.is_leaf and w.grad_fn is not None and torch.equal(w, model[0].weight)
        assert w.data_ptr() != model[0].weight.data_ptr()


def test_state_dict_keys_carry_the_module_prefix_like_torch():
    model = _model()
    assert list(mkdp.DataParallel(model).state_dict()) == list(nn.DataParallel(model).state_dict())


def test_batch_norm_per_piece_and_running_stats_from_the_first_piece():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    reference = copy.deepcopy(model)
    x = torch.randn(9, 4)
    out = mkdp.DataParallel(model, 3)(x)
    pieces = [reference[0](p).detach() for p in x.chunk(3)]
    want = torch.cat([nn.functional.batch_norm(h, None, None, reference[1].weight, reference[1].bias, training=True)
                      for h in pieces])
    torch.testing.assert_close(out, want)
    first = nn.BatchNorm1d(3)
    first(pieces[0])
    torch.testing.assert_close(model[1].running_mean, first.running_mean)
    torch.testing.assert_close(model[1].running_var, first.running_var)
    assert model[1].num_batches_tracked.item() == 1


def test_an_error_in_a_replica_names_it():
    class FailsOnShortPieces(nn.Module):
        def forward(self, x):
            if len(x) < 3:
                raise ValueError("piece too short")
            return x

    with pytest.raises(RuntimeError, match=r"Caught ValueError in replica 2: piece too short"):
        mkdp.DataParallel(FailsOnShortPieces(), 3)(torch.randn(8, 2))
