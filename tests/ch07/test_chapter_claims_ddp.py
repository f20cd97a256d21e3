"""Chapter 07's sentences about what ``dist.reduce`` promises and how DDP syncs the model
at wrap time, checked against the installed torch.

Oracle: torch's own docstring, and the calls DDP makes into ``torch.distributed``
(recorded by wrapping the functions it calls) in a one-process gloo group.
"""
from __future__ import annotations

import datetime
import os

import pytest
import torch.distributed as dist
from torch import nn


def test_reduce_promises_the_result_only_on_dst():
    assert "Only the process with rank ``dst`` is going to receive the final result." in dist.reduce.__doc__
    assert "undefined" not in dist.reduce.__doc__


@pytest.fixture
def one_process_group(tmp_path):
    dist.init_process_group("gloo", store=dist.FileStore(os.path.join(tmp_path, "store"), 1), rank=0,
                            world_size=1, timeout=datetime.timedelta(seconds=20))
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_ddp_syncs_the_model_with_one_coalesced_broadcast_not_one_per_tensor(one_process_group, monkeypatch):
    coalesced, single = [], []
    real_coalesced, real_broadcast = dist._broadcast_coalesced, dist.broadcast
    monkeypatch.setattr(dist, "_broadcast_coalesced",
                        lambda group, tensors, size, src: coalesced.append((len(tensors), size, src))
                        or real_coalesced(group, tensors, size, src))
    monkeypatch.setattr(dist, "broadcast", lambda *a, **k: single.append(a) or real_broadcast(*a, **k))
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    nn.parallel.DistributedDataParallel(model)
    states = len(list(model.parameters())) + len(list(model.buffers()))
    assert coalesced == [(states, 250 * 1024 * 1024, 0)] and single == []
