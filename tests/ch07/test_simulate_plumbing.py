"""The simulation's complete code (no exercise): the naive method's counts, input checks.

These pass in both modes: nothing here calls a step function.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, strategies as st
from torch.distributed import ReduceOp

from minikernel.distributed.ops import combine_
from minikernel.distributed.simulate import NOTES_EXAMPLE, SimulatedRing, simulate_naive


def test_naive_counts_like_the_notes():
    result = simulate_naive(NOTES_EXAMPLE)
    assert [c.received for c in result.counters] == [12, 4, 4, 4]
    assert [c.sent for c in result.counters] == [12, 4, 4, 4]
    assert [c.additions for c in result.counters] == [12, 0, 0, 0]
    expected = torch.tensor(NOTES_EXAMPLE).sum(0)
    assert all(torch.equal(b, expected) for b in result.buffers)


@given(st.integers(1, 6), st.integers(0, 9), st.sampled_from([ReduceOp.SUM, ReduceOp.MAX, ReduceOp.AVG]),
       st.integers(0, 5))
def test_naive_matches_torch(n, length, op, root):
    data = torch.randint(-9, 9, (n, length), generator=torch.Generator().manual_seed(n * 100 + length)).double()
    root = root % n
    result = simulate_naive(data, op, root)
    expected = {ReduceOp.SUM: data.sum(0), ReduceOp.MAX: data.amax(0), ReduceOp.AVG: data.mean(0)}[op]
    for b in result.buffers:
        torch.testing.assert_close(b, expected)
    assert result.counters[root].received == (n - 1) * length
    assert all(c.sent == length for r, c in enumerate(result.counters) if r != root)


def test_one_rank_needs_no_step():
    ring = SimulatedRing([[1, 2, 3]])
    assert ring.total_steps == 0 and ring.run()[0].tolist() == [1, 2, 3]


@pytest.mark.parametrize("data, error, text", [
    ([[1, 2], [3]], ValueError, "rank 1 has 1"),
    ([], ValueError, "at least one rank"),
    ([[1.0, 2.0], [1, 2]], ValueError, "dtype"),
    (torch.zeros(2, 2, 2), ValueError, "2-D tensor"),
])
def test_bad_rows_are_refused(data, error, text):
    with pytest.raises(error, match=text):
        SimulatedRing(data)


def test_integer_avg_and_unknown_ops_are_refused_before_any_step():
    with pytest.raises(RuntimeError, match="AVG needs a floating-point") as info:
        SimulatedRing([[1, 2], [3, 4]], ReduceOp.AVG)
    assert type(info.value) is RuntimeError  # not a stub's NotImplementedError
    with pytest.raises(ValueError, match="PRODUCT is not supported"):
        SimulatedRing([[1, 2], [3, 4]], ReduceOp.PRODUCT)
    with pytest.raises(TypeError, match="torch.bool"):
        SimulatedRing([[True], [False]])


def test_combine_matches_torch():
    a, b = torch.tensor([1, 7, -3]), torch.tensor([4, 2, -5])
    assert combine_(a.clone(), b, ReduceOp.SUM).tolist() == (a + b).tolist()
    assert combine_(a.clone(), b, ReduceOp.MAX).tolist() == torch.maximum(a, b).tolist()
    assert combine_(a.clone(), b, ReduceOp.MIN).tolist() == torch.minimum(a, b).tolist()
    small = torch.tensor([100], dtype=torch.int8)
    assert combine_(small, torch.tensor([100], dtype=torch.int8)).item() == -56  # wraps like gloo
    with pytest.raises(ValueError, match="shape"):
        combine_(a.clone(), b[:2])
