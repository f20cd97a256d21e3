"""TorchElastic membership change: a second node joins a running ``torchrun --nnodes 1:2`` job.

Oracle: ``ddp.train_single`` (one process, whole batches) for the training; the world
sizes are those the two agents were started to reach (1 node, then 2).
"""
from __future__ import annotations

import pytest
import torch

from minikernel.distributed.ddp import train_single
from minikernel.distributed.elastic_membership import agent_command, main, run_membership

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def grown():
    return run_membership(steps=6, grow_at=3)


def test_the_world_grows_from_one_node_to_two_at_the_join(grown):
    assert grown["returncodes"] == [0, 0]
    assert grown["worlds"] == [1, 1, 1, 2, 2, 2]
    assert grown["world_size"] == 2 and grown["resumed_at"] == 3
    sizes = [line for line in grown["agent"] if "group_world_size=" in line]
    assert sizes == ["group_world_size=1", "group_world_size=2"]
    assert any("Detected 1 new nodes" in line for line in grown["agent"])


def test_a_membership_change_is_not_a_retry(grown):
    # the agents run with --max-restarts=0, and the restart count stays 0
    assert "--max-restarts=0" in agent_command(1234, "d", 6, 3, True, 10.0)
    assert grown["restart_count"] == 0


def test_after_the_join_the_parameters_equal_one_process_training(grown):
    for got, want in zip(grown["params"], train_single(6), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("grow_at", [0, 6])
def test_a_join_step_outside_the_run_is_refused(grow_at, capsys):
    with pytest.raises(SystemExit):
        main(["--dir", "d", "--steps", "6", "--grow-at", str(grow_at)])
    assert "--grow-at must be in 1..5" in capsys.readouterr().err
