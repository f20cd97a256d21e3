"""RPC (model parallel by remote calls) and TorchElastic (restart after a failure), on this machine.

Oracles: plain tensor arithmetic and a local ``nn.Linear`` for the RPC calls;
``ddp.train_single`` (one process, whole batches) for the trainings.
"""
from __future__ import annotations

import pytest
import torch

from minikernel.distributed import run_ranks
from minikernel.distributed.ddp import train_single
from minikernel.distributed.elastic_demo import run_elastic
from minikernel.distributed.rpc_demo import rpc_basics_rank, train_rpc_rank


def test_rpc_sync_async_and_rref_run_in_the_other_process(tmp_path):
    seen, ps = run_ranks(rpc_basics_rank, 2, str(tmp_path / "rpc"), timeout=20, deadline=90)
    assert ps is None
    name, pid, doubled = seen["rpc_sync"]
    assert name == "ps" and pid != seen["pid"]
    torch.testing.assert_close(doubled, 2 * torch.arange(3.0))
    for k, got in enumerate(seen["rpc_async"]):
        torch.testing.assert_close(got, torch.arange(3.0) + k)
    assert seen["owner"] == "ps" and seen["is_owner"] is False
    torch.testing.assert_close(seen["remote_forward"], seen["local_forward"])


def test_model_split_by_rpc_trains_like_one_process(tmp_path):
    params, ps = run_ranks(train_rpc_rank, 2, str(tmp_path / "rpc"), 3, timeout=20, deadline=90)
    assert ps is None and len(params) == 4
    for got, want in zip(params, train_single(3)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def restarted():
    return run_elastic(steps=6, fail_at=3, max_restarts=1)


def test_elastic_restart_resumes_from_the_checkpoint(restarted):
    assert restarted["returncode"] == 0
    assert restarted["restart_count"] == 1 and restarted["resumed_at"] == 3 and restarted["world_size"] == 2
    assert any("InjectedFailure: rank 1 fails at step 3 (attempt 0)" in line for line in restarted["agent"])


def test_elastic_restart_ends_equal_to_an_uninterrupted_run(restarted):
    for got, want in zip(restarted["params"], train_single(6), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_without_restarts_the_failure_ends_the_job():
    with pytest.raises(RuntimeError, match="torchrun exited with 1 and no result"):
        run_elastic(steps=6, fail_at=3, max_restarts=0)
