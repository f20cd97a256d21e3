"""DataParallel against DDP: the bytes each moves per step, counted; the timed steps train the same.

Oracles: byte counts from the model's and batch's shapes (numel x 4 bytes), computed
here; the plain model's SGD steps in this process.
"""
from __future__ import annotations

import math

import pytest
import torch

from minikernel.distributed import data_parallel as mkdp, run_ranks
from minikernel.distributed.dp_vs_ddp import (
    compare_step_times,
    ddp_bytes_rank,
    dp_bytes_per_step,
    make_batch,
    make_model,
    step_times,
)

WIDTH, DEPTH, ROWS = 16, 3, 12


def _param_bytes() -> int:
    return 4 * DEPTH * (WIDTH * WIDTH + WIDTH)


@pytest.mark.parametrize("devices", [2, 3])
def test_dp_moves_parameters_twice_and_activations_through_device_0(devices):
    counts = dp_bytes_per_step(devices, WIDTH, DEPTH, ROWS)
    piece = 4 * (ROWS // devices) * WIDTH
    assert counts == {"replicate (parameters)": (devices - 1) * _param_bytes(),
                      "scatter (inputs)": (devices - 1) * piece, "gather (outputs)": (devices - 1) * piece,
                      "backward: output gradients": (devices - 1) * piece,
                      "backward: parameter gradients": (devices - 1) * _param_bytes()}


@pytest.mark.parametrize("devices", [2, 3])
def test_ddp_allreduces_the_gradients_once_per_step(devices):
    for seen in run_ranks(ddp_bytes_rank, devices, WIDTH, DEPTH, ROWS, timeout=20, deadline=90):
        assert seen["allreduce (gradients)"] == _param_bytes() and seen["buckets"] >= 1


def test_timed_dataparallel_steps_train_like_the_plain_model():
    plain, wrapped = make_model(WIDTH, DEPTH), make_model(WIDTH, DEPTH)
    x, y = make_batch(ROWS, WIDTH)
    times = step_times(plain, plain, x, y, 1, 3)
    step_times(wrapped, mkdp.DataParallel(wrapped, devices=2), x, y, 1, 3)
    assert len(times) == 3
    for a, b in zip(plain.parameters(), wrapped.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_compare_step_times_reports_three_medians():
    medians = compare_step_times(2, WIDTH, DEPTH, ROWS, warmup=1, repeats=3, timeout=20)
    assert list(medians) == ["one process, whole batch", "DataParallel, 2 threads", "DDP, 2 processes"]
    assert all(math.isfinite(v) and v > 0 for v in medians.values())
