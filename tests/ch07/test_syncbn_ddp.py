"""SyncBatchNorm statistics and DistributedDataParallel on CPU processes (complete code).

Torch is the oracle: ``F.batch_norm`` on the concatenated batch, and plain
single-process training on the full batch. These use ``dist.all_reduce`` (no
exercise), so they pass in both modes.
"""
from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from minikernel.distributed import run_ranks
from minikernel.distributed.ddp import train_ddp_rank, train_single
from minikernel.distributed.syncbn import batch_norm_reference, global_batch_stats, sync_bn_rank


@pytest.mark.parametrize("world, shape", [(2, (8, 3)), (3, (7, 4, 5)), (4, (9, 2, 3, 3))])
def test_sync_batch_norm_equals_batch_norm_on_the_whole_batch(world, shape):
    full = torch.randn(shape, generator=torch.Generator().manual_seed(world), dtype=torch.float64) * 3 + 1
    results = run_ranks(sync_bn_rank, world, full)
    out, running_mean, running_var = batch_norm_reference(full, shape[1])
    torch.testing.assert_close(torch.cat([y for y, _, _ in results]), out)
    for _, mean, var in results:
        torch.testing.assert_close(mean, running_mean)
        torch.testing.assert_close(var, running_var)


def _stats(full: torch.Tensor):
    mine = full.tensor_split(dist.get_world_size())[dist.get_rank()]
    return global_batch_stats(mine)


def test_global_stats_are_the_var_mean_of_the_concatenated_batch():
    full = torch.randn(10, 3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    var, mean = torch.var_mean(full, dim=[0, 2], correction=0)
    for got_mean, got_var, count in run_ranks(_stats, 3, full):
        torch.testing.assert_close(got_mean, mean)
        torch.testing.assert_close(got_var, var)
        assert count == 40


def test_ddp_gives_the_parameters_of_single_process_training():
    single = train_single(steps=4)
    for rank, result in enumerate(run_ranks(train_ddp_rank, 2, 4, timeout=20, deadline=60)):
        assert rank == 0 or not result["same_before_wrap"], "ranks other than 0 start from other seeds"
        assert result["same_after_wrap"], "DDP broadcasts rank 0's parameters when it wraps the model"
        for got, want in zip(result["params"], single):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
