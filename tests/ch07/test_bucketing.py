"""Exercise 7.5 (minikernel/distributed/bucketing.py): DDP's bucket assignment.

Torch is the oracle: ``torch.distributed._compute_bucket_assignment_by_size``, the
function DDP itself calls (C++, ``reducer.cpp``), on the same tensors and limits.
"""
from __future__ import annotations

import sys

import pytest
import torch
import torch.distributed as dist
from hypothesis import given, strategies as st

from minikernel.distributed.bucketing import compute_bucket_assignment_by_size

DTYPES = (torch.float32, torch.float64, torch.float16, torch.int64)


def torch_assignment(tensors, limits, tensor_indices=None):
    return dist._compute_bucket_assignment_by_size(tensors, limits, [False] * len(tensors),
                                                   [] if tensor_indices is None else list(tensor_indices))


def _as_lists(result):
    indices, limits = result
    return [list(map(int, b)) for b in indices], [int(x) for x in limits]


tensor_specs = st.lists(st.tuples(st.integers(0, 40), st.sampled_from(DTYPES)), min_size=1, max_size=14)
limit_lists = st.lists(st.integers(1, 160), min_size=1, max_size=3)


def _tensors(specs):
    return [torch.zeros(n, dtype=dtype) for n, dtype in specs]


@pytest.mark.exercise("7.5")
def test_the_docstring_example():
    ts = [torch.zeros(3), torch.zeros(5), torch.zeros(4)]
    assert _as_lists(compute_bucket_assignment_by_size(ts, [16, 24])) == _as_lists(torch_assignment(ts, [16, 24]))


@pytest.mark.exercise("7.5")
def test_a_tensor_that_reaches_the_limit_exactly_closes_its_bucket():
    ts = [torch.zeros(4), torch.zeros(4), torch.zeros(1)]  # 16 bytes each reaches a limit of 16
    got = _as_lists(compute_bucket_assignment_by_size(ts, [16]))
    assert got == _as_lists(torch_assignment(ts, [16])) == ([[0], [1], [2]], [16, 16, 16])


@pytest.mark.exercise("7.5")
@given(tensor_specs, limit_lists)
def test_parameter_order_like_torch(specs, limits):
    """Without tensor_indices (DDP at wrap time): same buckets, sorted by smallest index, same limits."""
    ts = _tensors(specs)
    assert _as_lists(compute_bucket_assignment_by_size(ts, limits)) == _as_lists(torch_assignment(ts, limits))


@pytest.mark.exercise("7.5")
@given(st.lists(st.integers(0, 40), min_size=1, max_size=14), limit_lists, st.sampled_from(DTYPES), st.randoms())
def test_gradient_ready_order_like_torch(sizes, limits, dtype, random):
    """With tensor_indices (DDP's rebuild): tensors in ready order, buckets in the order they closed."""
    ts = [torch.zeros(n, dtype=dtype) for n in sizes]
    order = list(range(len(ts)))
    random.shuffle(order)
    ordered = [ts[i] for i in order]
    got = compute_bucket_assignment_by_size(ordered, limits, order)
    assert _as_lists(got) == _as_lists(torch_assignment(ordered, limits, order))


@pytest.mark.exercise("7.5")
@given(tensor_specs, limit_lists, st.randoms())
def test_gradient_ready_order_with_several_dtypes(specs, limits, random):
    """Several dtypes in ready order: the same buckets as torch (the open ones at the end in any order)."""
    ts = _tensors(specs)
    order = list(range(len(ts)))
    random.shuffle(order)
    ordered = [ts[i] for i in order]
    got_indices, got_limits = _as_lists(compute_bucket_assignment_by_size(ordered, limits, order))
    want_indices, want_limits = _as_lists(torch_assignment(ordered, limits, order))
    assert sorted(zip(got_indices, got_limits)) == sorted(zip(want_indices, want_limits))


@pytest.mark.exercise("7.5")
def test_ddp_at_wrap_time_one_unlimited_bucket():
    params = [p for p in torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)).parameters()]
    got = _as_lists(compute_bucket_assignment_by_size(params, [sys.maxsize]))
    assert got == _as_lists(torch_assignment(params, [sys.maxsize])) == ([[0, 1, 2, 3]], [sys.maxsize])


@pytest.mark.exercise("7.5")
@pytest.mark.parametrize("tensor_indices", [None, [4, 3, 2, 1, 0]])
def test_a_kind_is_dtype_and_device(tensor_indices):
    """float32 tensors on two devices (meta is in every torch build) go to separate buckets, as in torch."""
    ts = [torch.zeros(4), torch.zeros(4, device="meta"), torch.zeros(4), torch.zeros(4, device="meta"),
          torch.zeros(4, dtype=torch.float64)]
    for limits in ([16, 40], [20, 40], [40]):
        got = _as_lists(compute_bucket_assignment_by_size(ts, limits, tensor_indices))
        want = _as_lists(torch_assignment(ts, limits, tensor_indices))
        assert sorted(zip(*got)) == sorted(zip(*want)), f"limits {limits}: {got} vs torch's {want}"
        if tensor_indices is None:
            assert got == want


@pytest.mark.exercise("7.5")
def test_a_view_counts_its_own_elements_not_its_storage():
    base = torch.zeros(4, 8)
    ts = [base[:, ::2], base[0], base.t()[1:3], torch.zeros(3).expand(5, 3)]
    for limits in ([16], [32, 64], [200]):
        assert _as_lists(compute_bucket_assignment_by_size(ts, limits)) == _as_lists(torch_assignment(ts, limits))
