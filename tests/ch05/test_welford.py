"""Exercises 5.2 (Welford's update) and 5.3 (Chan's merge), against torch's mean and var.

Torch computes every expected (count, mean, M2) in float64: ``M2 = n * var(correction=0)``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from minikernel.norm import online as W
from tests.ch05.strategies import randn


def triple(values: torch.Tensor) -> tuple[float, float, float]:
    """(count, mean, M2) by torch, in float64."""
    v = values.double()
    n = v.numel()
    return float(n), (v.mean().item() if n else 0.0), (v.var(correction=0).item() * n if n else 0.0)


def assert_triple(got, values: torch.Tensor, rel: float = 1e-9) -> None:
    count, mean, m2 = triple(values)
    assert float(got[0]) == count, f"count {got[0]} != {count}"
    assert float(got[1]) == pytest.approx(mean, rel=rel, abs=rel), f"mean {got[1]} != torch's {mean}"
    assert float(got[2]) == pytest.approx(m2, rel=rel, abs=rel), f"M2 {got[2]} != n * torch.var(correction=0) = {m2}"


# ------------------------------------------------------------------ 5.2
@pytest.mark.exercise("5.2")
def test_one_update_from_empty():
    assert tuple(float(v) for v in W.welford_update(0.0, 0.0, 0.0, 3.5)) == (1.0, 3.5, 0.0)
    count, mean, m2 = W.welford_update(1.0, 3.5, 0.0, 5.5)  # two values: mean 4.5, M2 = 2 * 1.0
    assert (count, mean, m2) == (2.0, 4.5, 2.0)


@pytest.mark.exercise("5.2")
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=40))
def test_streaming_matches_torch_mean_and_var(values):
    got = W.welford(np.array(values))
    assert_triple(got, torch.tensor(values, dtype=torch.float64), rel=1e-7)


@pytest.mark.exercise("5.2")
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_welford_var_has_torch_correction(correction):
    x = randn((50,), torch.float64, seed=3)
    assert float(W.welford_var(x.numpy(), correction)) == pytest.approx(x.var(correction=correction).item())


@pytest.mark.exercise("5.2")
def test_float32_stays_float32():
    count, mean, m2 = W.welford(np.array([1.0, 2.0, 4.0], np.float32))
    assert {type(count), type(mean), type(m2)} == {np.float32}, "the accumulators changed type"


@pytest.mark.exercise("5.2")
def test_welford_is_right_where_the_one_pass_formula_cancels():
    """float32 data with mean 1e4 and std 1e-2: the issue's example."""
    x = randn((2000,), torch.float32, seed=4, scale=1e-2, shift=1e4)
    truth = x.double().var().item()  # the variance of the float32 values, in float64
    welford = float(W.welford_var(x.numpy()))
    assert abs(welford - truth) < 0.1 * truth, f"Welford in float32 gave {welford}, torch (float64) {truth}"
    naive = float(W.one_pass_var(x.numpy()))
    assert not abs(naive - truth) < 0.5 * truth, f"the one-pass formula happened to work: {naive}"


# ------------------------------------------------------------------ 5.3
@pytest.mark.exercise("5.3")
@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 2**16), st.sampled_from([0.0, 100.0]))
def test_merge_matches_torch_on_the_concatenation(n_a, n_b, seed, shift):
    a, b = randn((n_a,), seed=seed, shift=shift), randn((n_b,), seed=seed + 1, shift=-shift)
    got = W.welford_merge(*triple(a), *triple(b))
    assert_triple(got, torch.cat([a, b]), rel=1e-9)


@pytest.mark.exercise("5.3")
def test_merging_with_an_empty_part_returns_the_other():
    a = randn((5,), seed=5)
    empty = (0.0, 0.0, 0.0)
    assert W.welford_merge(*triple(a), *empty) == triple(a)
    assert W.welford_merge(*empty, *triple(a)) == triple(a)
    assert tuple(float(v) for v in W.welford_merge(*empty, *empty)) == empty


@pytest.mark.exercise("5.3")
def test_merge_keeps_float32():
    f = np.float32
    got = W.welford_merge(f(2), f(1.5), f(0.5), f(3), f(4.0), f(2.0))
    assert {type(v) for v in got} == {np.float32}
    assert_triple(got, torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), rel=1e-6)


@pytest.mark.exercise("5.3")
def test_global_statistics_from_per_rank_triples_match_the_whole_batch():
    """SyncBN's question: the statistics of the whole batch from each rank's own."""
    ranks = [randn((n,), seed=10 + n, shift=3.0) for n in (4, 7, 1, 12)]
    mean, var = W.stats_from_triples(*zip(*[triple(r) for r in ranks]))
    whole = torch.cat(ranks)
    assert float(mean) == pytest.approx(whole.mean().item())
    assert float(var) == pytest.approx(whole.var(correction=0).item())


@pytest.mark.exercise("5.3")  # needs 5.2 too: counts for the later of the two
@pytest.mark.parametrize("chunks", [2, 3, 16])
def test_parallel_welford_chunks_then_merge(chunks):
    x = randn((100,), torch.float64, seed=6, shift=50.0)
    assert_triple(W.welford(x.numpy(), chunks=chunks), x, rel=1e-9)


# ------------------------------------------------------------------ plumbing
def test_one_pass_formula_is_fine_for_centred_data_and_sums_add_up():
    x = randn((1000,), torch.float64, seed=7)
    assert float(W.one_pass_var(x.numpy())) == pytest.approx(x.var().item(), rel=1e-9)
    parts = x.split(300)
    mean, var = W.stats_from_sums([p.sum().item() for p in parts], [(p * p).sum().item() for p in parts],
                                  [float(p.numel()) for p in parts])
    assert mean == pytest.approx(x.mean().item()) and var == pytest.approx(x.var(correction=0).item())


def test_welford_needs_a_chunk():
    with pytest.raises(ValueError, match="chunks must be at least 1"):
        W.welford([1.0, 2.0], chunks=0)
    with pytest.raises(ValueError, match="at least one"):
        W.merge_all([])
