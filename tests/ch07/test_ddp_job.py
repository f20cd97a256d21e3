"""The rest of a DDP job (complete code): sampler, checkpoints, a model cut across ranks,
launcher variables, stores. Torch is the oracle: ``DistributedSampler``, single-process
training, torchrun itself.
"""
from __future__ import annotations

import datetime
import itertools

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

from minikernel.distributed import run_ranks
from minikernel.distributed.checkpointing import checkpoint_rank
from minikernel.distributed.ddp import train_single
from minikernel.distributed.model_parallel import train_pipeline_rank
from minikernel.distributed.rendezvous import launch_env, torchrun_nodes
from minikernel.distributed.sampler import shard_indices


@pytest.mark.parametrize("n, replicas, shuffle, drop_last, epoch",
                         [c for c in itertools.product((1, 5, 10, 13), (1, 2, 3, 4, 7), (False, True), (False, True),
                                                       (0, 3)) if not (c[3] and c[0] < c[1])])
def test_shard_indices_equal_distributed_sampler(n, replicas, shuffle, drop_last, epoch):
    for rank in range(replicas):
        sampler = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=shuffle, seed=5,
                                     drop_last=drop_last)
        sampler.set_epoch(epoch)
        assert shard_indices(n, replicas, rank, shuffle, 5, epoch, drop_last) == list(sampler)


def test_shard_indices_refuse_a_rank_outside_the_world():
    with pytest.raises(ValueError, match="Invalid rank 4"):
        shard_indices(10, 4, 4)


def test_checkpoint_saved_on_rank_0_loads_everywhere(tmp_path):
    for seen in run_ranks(checkpoint_rank, 2, str(tmp_path), timeout=20, deadline=60):
        assert seen["equal to the DDP model"] and seen["files"] == 1
        assert seen["keys"][0].startswith("module.") and seen["locations"] == ["cpu"]


@pytest.mark.parametrize("world", [2, 4])
def test_pipeline_stages_equal_single_process_training(world):
    single = train_single(3)
    for rank, params in enumerate(run_ranks(train_pipeline_rank, world, 3, timeout=20, deadline=90)):
        want = single[:2] if rank % 2 == 0 else single[2:]
        for got, expected in zip(params, want):
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_launch_env_is_what_torchrun_sets_for_two_nodes():
    rows = torchrun_nodes(nnodes=2, nproc_per_node=2)
    assert len(rows) == 4
    for row in rows:
        want = launch_env(2, 2, int(row["GROUP_RANK"]), int(row["LOCAL_RANK"]))
        assert {k: int(row[k]) for k in want} == want
        assert row["OMP_NUM_THREADS"] == "1"


def test_file_store_set_get_add_and_wait_timeout(tmp_path):
    store = dist.FileStore(str(tmp_path / "store"), 1)
    store.set("key", "value")
    assert store.get("key") == b"value"
    assert [store.add("n", 2) for _ in range(2)] == [2, 4]
    with pytest.raises(RuntimeError, match="[Tt]imeout"):
        store.wait(["missing"], datetime.timedelta(seconds=0.1))
