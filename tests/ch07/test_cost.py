"""Exercise 7.4 (minikernel/distributed/cost.py): the alpha-beta cost model.

Oracles: the traffic is counted independently — the naive root's by
``simulate_naive`` (complete code), the ring's by walking its schedule over
``torch.tensor_split`` chunks — and the fit is compared with ``torch.linalg.lstsq``.
"""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given, strategies as st

from minikernel.distributed import cost as C
from minikernel.distributed.simulate import NOTES_EXAMPLE, simulate_naive

worlds = st.integers(1, 64)
alphas = st.floats(0, 1e-3)
betas = st.floats(0, 1e-8)


def _ring_schedule(n: int, length: int, alpha: float, beta: float) -> tuple[int, int, float]:
    """(messages, values sent by rank 0, time) by walking the ring's 2(N-1) steps over real chunks.

    Each step lasts as long as its largest message, since every rank sends at once.
    """
    sizes = [c.numel() for c in torch.empty(length).tensor_split(n)]
    messages = sent = 0
    seconds = 0.0
    for step in range(n - 1):  # scatter-reduce: rank 0 sends chunk -step
        sent += sizes[(0 - step) % n]
        messages += 1
        seconds += alpha + beta * max(sizes)
    for step in range(n - 1):  # allgather: rank 0 sends chunk 1 - step
        sent += sizes[(1 - step) % n]
        messages += 1
        seconds += alpha + beta * max(sizes)
    return messages, sent, seconds


@pytest.mark.exercise("7.4")
def test_the_notes_numbers():
    # 4 ranks of 4 values, counted in values (beta = 1 per value, no latency)
    ring, naive = C.ring_cost(4, 4, 0.0, 1.0), C.naive_cost(4, 4, 0.0, 1.0)
    assert ring.nbytes == 6, "each rank sends 6 values in the ring (and receives 6)"
    assert naive.nbytes == simulate_naive(NOTES_EXAMPLE).counters[0].sent == 12, "the root sends 12"
    assert ring.messages == 6 and naive.messages == 3
    # time: the ring's 6 steps of one value each; the root receives 12 values, then sends 12
    assert ring.seconds == 6 and naive.seconds == 24


@pytest.mark.exercise("7.4")
@given(worlds, st.integers(1, 10**6), alphas, betas)
def test_ring_cost_follows_the_schedule(n, per_rank, alpha, beta):
    length = n * per_rank  # chunks of equal size: the model's S / N is exact
    cost = C.ring_cost(n, length * 4, alpha, beta / 4)  # float32: 4 bytes per value
    messages, sent, seconds = _ring_schedule(n, length, alpha, beta)
    assert cost.messages == messages
    assert math.isclose(cost.nbytes, sent * 4, rel_tol=1e-9)
    assert math.isclose(cost.seconds, seconds, rel_tol=1e-9, abs_tol=1e-15)
    assert cost.nbytes < 2 * length * 4 or n == 1, "the ring moves less than 2 S per rank"


@pytest.mark.exercise("7.4")
@given(st.integers(1, 8), st.integers(0, 50), alphas, betas)
def test_naive_cost_matches_the_simulated_root(n, length, alpha, beta):
    counters = simulate_naive(torch.zeros(n, length)).counters
    cost = C.naive_cost(n, length, alpha, beta)
    assert cost.nbytes == counters[0].sent == counters[0].received
    assert cost.messages == n - 1
    # the root receives everything before it can send: 2 (N - 1) transfers of S one after another
    assert math.isclose(cost.seconds, 2 * (n - 1) * (alpha + beta * length), rel_tol=1e-9, abs_tol=1e-15)


@pytest.mark.exercise("7.4")
@given(st.integers(2, 64), st.floats(1, 1e9), alphas, st.floats(1e-12, 1e-8))
def test_the_ring_beats_the_naive_method_on_bandwidth(n, nbytes, alpha, beta):
    ring, naive = C.ring_cost(n, nbytes, alpha, beta), C.naive_cost(n, nbytes, alpha, beta)
    assert math.isclose(naive.nbytes / ring.nbytes, n / 2, rel_tol=1e-9)  # the root moves N/2 times more
    assert ring.seconds <= naive.seconds + 1e-12


@pytest.mark.exercise("7.4")
def test_one_rank_costs_nothing_and_bad_input_is_refused():
    assert tuple(C.ring_cost(1, 1000, 1e-5, 1e-9)) == (0, 0, 0)
    assert tuple(C.naive_cost(1, 1000, 1e-5, 1e-9)) == (0, 0, 0)
    for fn in (C.ring_cost, C.naive_cost):
        with pytest.raises(ValueError):
            fn(0, 10, 0.0, 1.0)
        with pytest.raises(ValueError):
            fn(2, -1, 0.0, 1.0)


@pytest.mark.exercise("7.4")
@given(st.lists(st.floats(1, 1e8), min_size=2, max_size=12, unique=True), st.floats(0, 1e-3),
       st.floats(0, 1e-8), st.integers(0, 2**16))
def test_fit_alpha_beta_matches_lstsq(sizes, alpha, beta, seed):
    x = torch.tensor(sizes, dtype=torch.float64)
    assume((x.max() - x.min()) > 1e-3 * x.abs().max())  # well-conditioned: sizes really differ
    noise = torch.randn(len(sizes), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    t = alpha + beta * x + 1e-6 * noise
    A = torch.stack([torch.ones_like(x), x], 1)
    want = torch.linalg.lstsq(A, t[:, None]).solution.flatten()
    got_alpha, got_beta = C.fit_alpha_beta(x.tolist(), t.tolist())
    predicted = got_alpha + got_beta * x
    reference = want[0] + want[1] * x
    # compare the fitted lines where the data is (the parameters themselves can be ill-conditioned)
    torch.testing.assert_close(predicted, reference, rtol=1e-6, atol=1e-9)


@pytest.mark.exercise("7.4")
def test_fit_alpha_beta_recovers_an_exact_line_and_refuses_too_little_data():
    alpha, beta = C.fit_alpha_beta([1e3, 1e6, 4e6], [2e-5 + 1e-9 * 1e3, 2e-5 + 1e-9 * 1e6, 2e-5 + 1e-9 * 4e6])
    assert math.isclose(alpha, 2e-5, rel_tol=1e-6) and math.isclose(beta, 1e-9, rel_tol=1e-6)
    with pytest.raises(ValueError):
        C.fit_alpha_beta([1e3, 1e3], [1.0, 2.0])  # one distinct size: alpha and beta cannot be separated
    with pytest.raises(ValueError):
        C.fit_alpha_beta([1e3, 1e4], [1.0])
