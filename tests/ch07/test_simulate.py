"""Exercises 7.1 and 7.2 (minikernel/distributed/simulate.py): the ring in one process.

Torch is the oracle: after the scatter-reduce each rank's owned chunk must equal
``torch.stack(...).sum(0)`` (``amax``/``amin`` for MAX/MIN) over the ranks, and after
the allgather every buffer must equal it; intermediate steps are checked against
the partial reductions they must hold. The notes' tables are checked value for value.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, strategies as st
from torch.distributed import ReduceOp

from minikernel.distributed import simulate as S
from minikernel.distributed.simulate import NOTES_EXAMPLE, SimulatedRing

OPS = {ReduceOp.SUM: lambda t: t.sum(0), ReduceOp.MAX: lambda t: t.amax(0), ReduceOp.MIN: lambda t: t.amin(0)}

# The original notes' scatter-reduce, machine k = rank k-1: what each rank sends (->),
# receives (<-) and holds after each step.
NOTES_SCATTER = [
    ([1, 6, 11, 16], [16, 1, 6, 11], [[1, 2, 3, 20], [6, 6, 7, 8], [9, 16, 11, 12], [13, 14, 26, 16]]),
    ([20, 6, 16, 26], [26, 20, 6, 16], [[1, 2, 29, 20], [6, 6, 7, 28], [15, 16, 11, 12], [13, 30, 26, 16]]),
    ([29, 28, 15, 30], [30, 29, 28, 15], [[1, 32, 29, 20], [6, 6, 36, 28], [15, 16, 11, 40], [28, 30, 26, 16]]),
]


@st.composite
def rings(draw, ops=tuple(OPS)):
    """(data as a (ranks x length) tensor, op): 1-6 ranks, 0-13 values, ints or floats."""
    n = draw(st.integers(1, 6))
    length = draw(st.integers(0, 13))
    dtype = draw(st.sampled_from([torch.int64, torch.float64, torch.int32]))
    seed = draw(st.integers(0, 2**16))
    data = torch.randint(-50, 50, (n, length), generator=torch.Generator().manual_seed(seed)).to(dtype)
    return data, draw(st.sampled_from(ops))


def _chunked(data: torch.Tensor) -> list[list[torch.Tensor]]:
    rows = [row.clone() for row in data]
    return [list(r.tensor_split(len(rows))) for r in rows]


def _partial(data: torch.Tensor, op, ranks, chunk: int) -> torch.Tensor:
    """The reduction of ``chunk`` over ``ranks``, computed by torch."""
    n = data.shape[0]
    return OPS[op](torch.stack([data[q].tensor_split(n)[chunk] for q in ranks]))


@pytest.mark.exercise("7.1")
def test_scatter_reduce_reproduces_the_notes_tables():
    buffers = _chunked(torch.tensor(NOTES_EXAMPLE))
    for step, (sent, got, after) in enumerate(NOTES_SCATTER):
        sends = S.scatter_reduce_step(buffers, step, ReduceOp.SUM)
        assert [s.values.tolist() for s in sends] == [[v] for v in sent], f"step {step + 1}: what each rank sends"
        assert [s.src for s in sends] == [0, 1, 2, 3] and [s.dst for s in sends] == [1, 2, 3, 0]
        received = {s.dst: s.values.item() for s in sends}
        assert [received[r] for r in range(4)] == got, f"step {step + 1}: what each rank receives"
        assert [torch.cat(b).tolist() for b in buffers] == after, f"after step {step + 1}"
    # rank r owns chunk (r + 1) % 4, fully reduced: 32, 36, 40, 28 as in the notes
    assert [buffers[r][(r + 1) % 4].item() for r in range(4)] == [32, 36, 40, 28]


@pytest.mark.exercise("7.1")
def test_a_sent_message_keeps_its_values_through_later_steps():
    """Each Send holds a copy (``.clone()``): what happens to the buffers afterwards does not change what was sent."""
    buffers = _chunked(torch.tensor(NOTES_EXAMPLE))
    messages = [S.scatter_reduce_step(buffers, step, ReduceOp.SUM) for step in range(len(NOTES_SCATTER))]
    for chunk in (c for b in buffers for c in b):
        chunk.fill_(-1)  # what the allgather does next: it overwrites the chunks in place
    for step, ((sent, _, _), sends) in enumerate(zip(NOTES_SCATTER, messages)):
        assert [s.values.tolist() for s in sends] == [[v] for v in sent], (
            f"step {step + 1}'s messages changed after it: send copies of the chunks, not views of the buffers")


@pytest.mark.exercise("7.1")
@given(rings())
def test_scatter_reduce_steps_hold_the_partial_reductions(case):
    data, op = case
    n = data.shape[0]
    buffers = _chunked(data)
    for step in range(n - 1):
        before = [[c.clone() for c in b] for b in buffers]
        sends = S.scatter_reduce_step(buffers, step, op)
        assert [tuple(s[:3]) for s in sends] == [(r, (r + 1) % n, (r - step) % n) for r in range(n)]
        for s in sends:
            assert torch.equal(s.values, before[s.src][s.chunk]), "send the chunk as it was before the step"
        for r in range(n):
            # after step s, rank r's chunk (r - s - 1) holds ranks r - s - 1 .. r
            chunk = (r - step - 1) % n
            ranks = [(r - k) % n for k in range(step + 2)]
            assert torch.equal(buffers[r][chunk], _partial(data, op, ranks, chunk)), (
                f"step {step}: rank {r}, chunk {chunk} should reduce ranks {sorted(ranks)}")
    full = OPS[op](data)
    for r in range(n):
        owned = (r + 1) % n
        assert torch.equal(buffers[r][owned], full.tensor_split(n)[owned]), f"rank {r} owns chunk {owned}"


@pytest.mark.exercise("7.1")
def test_scatter_reduce_uses_values_from_before_the_step():
    # 2 ranks: both send at the same moment, so each must add the *other's original* chunk
    buffers = _chunked(torch.tensor([[1, 10], [100, 1000]]))
    S.scatter_reduce_step(buffers, 0, ReduceOp.SUM)
    assert [torch.cat(b).tolist() for b in buffers] == [[1, 1010], [101, 1000]]


def _after_scatter(data: torch.Tensor, op) -> list[list[torch.Tensor]]:
    """The state the allgather starts from, built by torch: rank r owns chunk r+1; the rest is stale (-7)."""
    n = data.shape[0]
    full = OPS[op](data).tensor_split(n)
    buffers = _chunked(torch.full_like(data, -7))
    for r in range(n):
        buffers[r][(r + 1) % n].copy_(full[(r + 1) % n])
    return buffers


@pytest.mark.exercise("7.2")
@given(rings())
def test_allgather_spreads_the_owned_chunks(case):
    data, op = case
    n = data.shape[0]
    buffers = _after_scatter(data, op)
    for step in range(n - 1):
        before = [[c.clone() for c in b] for b in buffers]
        sends = S.allgather_step(buffers, step)
        assert [tuple(s[:3]) for s in sends] == [(r, (r + 1) % n, (r + 1 - step) % n) for r in range(n)]
        for s in sends:
            assert torch.equal(s.values, before[s.src][s.chunk])
            assert torch.equal(buffers[s.dst][s.chunk], before[s.src][s.chunk]), "overwrite with what arrives"
    full = OPS[op](data)
    for r in range(n):
        assert torch.equal(torch.cat(buffers[r]), full), f"rank {r} after the allgather"


@pytest.mark.exercise("7.2")
def test_allgather_notes_example():
    buffers = _after_scatter(torch.tensor(NOTES_EXAMPLE), ReduceOp.SUM)
    sends = S.allgather_step(buffers, 0)
    assert [s.values.item() for s in sends] == [32, 36, 40, 28]  # each rank passes on the chunk it owns
    for step in (1, 2):
        S.allgather_step(buffers, step)
    assert [torch.cat(b).tolist() for b in buffers] == [[28, 32, 36, 40]] * 4


@pytest.mark.exercise("7.2")  # the whole ring: 7.1's scatter-reduce and 7.2's allgather, graded with the later
def test_simulated_ring_counts_like_the_notes():
    ring = SimulatedRing(NOTES_EXAMPLE)
    result = ring.run()
    expected = torch.tensor(NOTES_EXAMPLE).sum(0)
    assert all(torch.equal(b, expected) for b in result)
    assert [vars(c) for c in ring.counters] == [dict(sent=6, received=6, additions=3, overwrites=3)] * 4
    table = ring.table("scatter-reduce").splitlines()
    assert table[1] == "rank 0: [1, 2, 3, 4]  (-> 1) (<- 16) (add)  => [1, 2, 3, 20]"
    assert table[-1] == "rank 3: [13, 30, 26, 16]  (-> 30) (<- 15) (add)  => [28, 30, 26, 16]"
    assert ring.table("allgather").splitlines()[-1] == "rank 3: [28, 30, 36, 40]  (-> 36) (<- 32) (overwrite)  => [28, 32, 36, 40]"


@pytest.mark.exercise("7.2")  # needs 7.1 too: counts for the later of the two
@given(rings(ops=(ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.AVG)))
def test_simulated_ring_equals_torch_reduction(case):
    data, op = case
    if op == ReduceOp.AVG:
        data = data.double()
    n, length = data.shape
    ring = SimulatedRing(data, op)
    result = ring.run()
    expected = (data.mean(0) if op == ReduceOp.AVG else OPS[op](data)).to(data.dtype)  # sum() makes int64
    for r, b in enumerate(result):
        torch.testing.assert_close(b, expected, msg=lambda m: f"rank {r}: {m}")
    # traffic: rank r sends every chunk but (r + 1) in the scatter-reduce and every chunk but (r + 2) after
    sizes = [c.numel() for c in torch.empty(length).tensor_split(n)]
    for r, k in enumerate(ring.counters):
        assert k.sent == (2 * length - sizes[(r + 1) % n] - sizes[(r + 2) % n] if n > 1 else 0)
        assert k.additions + k.overwrites == k.received
