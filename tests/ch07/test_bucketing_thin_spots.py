"""Exercise 7.5: two devices of one type (``cuda:0`` and ``cuda:1``) are two kinds.

A bucket is one flat tensor on one device, so torch keys its open buckets by dtype *and*
device, index included. A machine without two GPUs cannot make such tensors, so they are
CPU tensors whose ``device`` says ``cuda:0`` / ``cuda:1``; the oracle is torch's
``_compute_bucket_assignment_by_size`` on the same layout with two devices it can make
(``cpu`` and ``meta``) standing in for them.
"""
from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from minikernel.distributed.bucketing import compute_bucket_assignment_by_size


class _OnDevice(torch.Tensor):
    """A CPU tensor that reports another device (only ``.device`` is changed)."""

    @property
    def device(self) -> torch.device:
        return self._claimed_device


def _on(device: str, n: int) -> torch.Tensor:
    t = torch.Tensor._make_subclass(_OnDevice, torch.zeros(n))
    t._claimed_device = torch.device(device)
    return t


def _as_lists(result):
    indices, limits = result
    return [list(map(int, b)) for b in indices], [int(x) for x in limits]


@pytest.mark.exercise("7.5")
@pytest.mark.parametrize("tensor_indices", [None, [5, 4, 3, 2, 1, 0]])
@pytest.mark.parametrize("limits", [[16, 40], [20, 40], [40], [1000]])
def test_two_devices_of_one_type_are_two_kinds(tensor_indices, limits):
    layout = ["cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:1", "cuda:0"]
    ours = [_on(d, 4) for d in layout]
    stand_in = [torch.zeros(4, device="cpu" if d == "cuda:0" else "meta") for d in layout]
    want = _as_lists(dist._compute_bucket_assignment_by_size(
        stand_in, limits, [False] * len(layout), [] if tensor_indices is None else tensor_indices))
    got = _as_lists(compute_bucket_assignment_by_size(ours, limits, tensor_indices))
    assert sorted(zip(*got)) == sorted(zip(*want)), f"limits {limits}: {got} vs torch's {want}"
    if tensor_indices is None:
        assert got == want
