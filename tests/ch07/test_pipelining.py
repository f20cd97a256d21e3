"""The reference ring's pipelining, which is complete code (not an exercise): ``pieces`` and
``pipelined_ring_cost``.

Oracles: ``pieces`` against ``torch.tensor_split`` and the bytes it promises;
``pipelined_ring_cost`` against an event-by-event replay of the reference's schedule
(``_replay``: links, receives posted ahead, one adder per rank), which knows nothing
of the closed form.
"""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, strategies as st

from minikernel.distributed.cost import pipelined_ring_cost
from minikernel.distributed.pieces import PIECE_BYTES, piece_count, pieces


@given(st.integers(0, 5000), st.sampled_from([torch.float32, torch.float16, torch.int64, torch.uint8]),
       st.integers(1, 3000))
def test_pieces_cover_the_chunk_in_order(length, dtype, piece_bytes):
    chunk = torch.arange(length).to(dtype)
    got = pieces(chunk, piece_bytes)
    count = math.ceil(length / max(1, piece_bytes // chunk.element_size()))  # whole elements per piece
    assert len(got) == count
    if piece_bytes % chunk.element_size() == 0:
        assert count == piece_count(length * chunk.element_size(), piece_bytes), "what the cost model counts"
    assert [p.numel() for p in got] == [p.numel() for p in chunk.tensor_split(count)] if count else got == []
    assert all(p.numel() * p.element_size() <= max(piece_bytes, p.element_size()) for p in got)
    if got:
        assert torch.equal(torch.cat(got), chunk)
        assert all(p.is_contiguous() and p.untyped_storage().data_ptr() == chunk.untyped_storage().data_ptr()
                   for p in got), "pieces are views: adding into one adds into the chunk"


def test_the_reference_cuts_16m_floats_over_4_ranks_into_8_pieces_per_chunk():
    chunk = torch.empty(1 << 22)  # 16M float32 over 4 ranks: 16 MiB per chunk
    assert [p.numel() for p in pieces(chunk)] == [1 << 19] * 8
    assert PIECE_BYTES == 2 << 20


def test_piece_bytes_must_be_positive():
    with pytest.raises(ValueError, match="piece_bytes must be positive"):
        pieces(torch.ones(3), 0)


def _replay(n: int, p: int, alpha: float, beta: float, gamma: float, nbytes: float) -> float:
    """Seconds of the reference schedule, replayed message by message for one rank.

    Every rank does the same, so the previous rank's k-th send is this rank's k-th
    arrival, and the next rank posts its k-th receive when this rank does. A send
    starts when its data is ready, the link is free and the receiver has posted the
    matching receive. Scatter-reduce receives are all posted at the start (a scratch
    piece each); allgather receives are all posted once the scatter-reduce's forwards
    have left; the finished chunk's pieces leave as soon as they are added.
    """
    m = nbytes / n / p
    t, g = alpha + beta * m, gamma * m
    arrivals_sr, arrivals_ag = (n - 1) * p, (n - 1) * p
    ready: list[float] = [0.0] * p  # send k's data: own chunk first
    posted: list[float] = []  # the k-th receive's posting time (the same on every rank)
    send_end: list[float] = []
    add_end: list[float] = []
    link = 0.0

    def send(k: int) -> None:
        nonlocal link
        start = max(ready[k], link, posted[k])
        link = start + t
        send_end.append(link)

    posted += [0.0] * arrivals_sr  # the scatter-reduce's receives: all at once
    sends_sr = (n - 1) * p  # own chunk and the forwarded pieces; then the finished chunk's pieces
    for i in range(arrivals_sr):
        while len(send_end) <= i:
            send(len(send_end))  # what arrives at the next rank as its i-th piece, by symmetry
        done = max(send_end[i], add_end[-1] if add_end else 0.0) + g
        add_end.append(done)
        ready.append(done)  # forwarded: the next scatter-reduce step, or the allgather's first
    while len(send_end) < sends_sr:
        send(len(send_end))
    gather_posted = max(add_end[-1], send_end[sends_sr - 1])
    posted += [gather_posted] * arrivals_ag
    for k in range(arrivals_ag):
        while len(send_end) <= arrivals_sr + k:
            send(len(send_end))
        if k < (n - 2) * p:
            ready.append(send_end[arrivals_sr + k])  # forwarded once it has arrived
    while len(send_end) < len(ready):
        send(len(send_end))
    return max(send_end)


@given(st.integers(2, 8), st.integers(1, 8), st.floats(0, 1e-3), st.floats(1e-10, 1e-8), st.floats(0, 1))
def test_pipelined_cost_follows_the_replayed_schedule(n, p, alpha, beta, gamma_fraction):
    gamma = beta * gamma_fraction  # additions no slower than the link: the formula's assumption
    nbytes = n * p * 1e6
    cost = pipelined_ring_cost(n, nbytes, alpha, beta, gamma, piece_bytes=int(1e6))
    assert cost.messages == 2 * (n - 1) * p
    assert math.isclose(cost.nbytes, 2 * (n - 1) / n * nbytes)
    assert math.isclose(cost.seconds, _replay(n, p, alpha, beta, gamma, nbytes), rel_tol=1e-9)


def test_one_piece_and_free_additions_is_the_plain_ring():
    # P = 1, gamma = 0: 2 (N - 1) (alpha + S / N beta), exercise 7.4's ring_cost
    for n in (2, 3, 4, 8):
        got = pipelined_ring_cost(n, 4e6, 1e-5, 1e-9, 0.0, piece_bytes=1 << 30)
        assert got.messages == 2 * (n - 1)
        assert math.isclose(got.seconds, 2 * (n - 1) * (1e-5 + 4e6 / n * 1e-9))


def test_pieces_hide_all_additions_but_one():
    n, s, alpha, beta, gamma = 4, 64 * 2**20, 50e-6, 1 / 2e9, 1 / 15e9
    whole = pipelined_ring_cost(n, s, alpha, beta, gamma, piece_bytes=s)
    four = pipelined_ring_cost(n, s, alpha, beta, gamma, piece_bytes=s // n // 4)
    assert math.isclose(whole.seconds, 2 * (n - 1) * (alpha + s / n * beta) + (n - 1) * gamma * s / n)
    assert math.isclose(four.seconds, 2 * (n - 1) * (4 * alpha + s / n * beta) + gamma * s / (n * 4))
    assert four.seconds < whole.seconds


def test_nothing_to_do_costs_nothing_and_bad_arguments_raise():
    assert pipelined_ring_cost(1, 1e6, 1.0, 1.0).seconds == 0
    assert pipelined_ring_cost(4, 0, 1.0, 1.0) == (0, 0.0, 0.0)
    with pytest.raises(ValueError, match="needs world_size >= 1 and nbytes >= 0, got world_size=0"):
        pipelined_ring_cost(0, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="needs world_size >= 1 and nbytes >= 0, got world_size=2, nbytes=-1.0"):
        pipelined_ring_cost(2, -1.0, 0.0, 0.0)
