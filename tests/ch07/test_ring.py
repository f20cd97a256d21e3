"""Exercise 7.3 (minikernel/distributed/ring.py): the ring across real processes.

Torch is the oracle: in every rank ``dist.all_reduce`` runs on a contiguous copy of
the same input (gloo reduces strided tensors wrongly, see the chapter), and
``ring_allreduce`` must give the same result — exactly for integers, allclose for
floats. Each test starts its ranks once and runs a table of cases inside them
(starting processes per hypothesis example would be slow); the cases go from
small to large, and the first failing one is reported.
"""
from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from minikernel.distributed import Ring, ring_allreduce, ring_allreduce_chunks, run_ranks
from tests.torch_versions import torch_before

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
OPS = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX, ReduceOp.MIN)
LAYOUTS = ("contiguous", "strided", "transposed", "scalar")


def _cases(world: int) -> list[tuple]:
    """(length, dtype, op, layout): lengths around the world size, every dtype, op and layout."""
    lengths = sorted({0, 1, max(world - 1, 1), world, world + 1, 2 * world + 3, 17, 1000})
    cases = []
    for i, length in enumerate(lengths):
        for j, dtype in enumerate(FLOATS + INTS):
            op = OPS[(i + j) % len(OPS)]
            if op == ReduceOp.AVG and not dtype.is_floating_point:
                op = ReduceOp.SUM
            cases.append((length, dtype, op, LAYOUTS[(i + 2 * j) % 3]))
    cases += [(1, torch.float32, ReduceOp.SUM, "scalar"), (1, torch.int64, ReduceOp.MAX, "scalar")]
    return cases


def _input(length: int, dtype: torch.dtype, layout: str, seed: int) -> torch.Tensor:
    """This rank's input: random values, laid out as asked (strided views share a bigger base)."""
    g = torch.Generator().manual_seed(seed)
    # Only a strided view needs a base bigger than itself: the large cases' millions of
    # elements are made once, not twice (fresh memory costs page faults in every rank).
    size = 2 * length + 1 if layout == "strided" else max(length, 1)
    if dtype.is_floating_point:
        base = torch.randn(size, generator=g, dtype=dtype if dtype in (torch.float32, torch.float64) else None)
        base = base.to(dtype)
    else:
        info = torch.iinfo(dtype)  # the full range: integer sums must wrap exactly like gloo's
        base = torch.randint(info.min, info.max, (size,), generator=g, dtype=torch.int64).to(dtype)
    if layout == "scalar":
        return base[0].clone()
    if layout == "strided":
        return base[1::2][:length]
    if layout == "transposed" and length % 2 == 0 and length:
        return base.view(2, length // 2).t()
    return base if length else base[:0].clone()


def _check_cases(cases: list[tuple]) -> list[str]:
    """In a rank: run every case through dist.all_reduce and ring_allreduce; describe mismatches."""
    rank, world = dist.get_rank(), dist.get_world_size()
    problems = []
    for k, (length, dtype, op, layout) in enumerate(cases):
        x = _input(length, dtype, layout, seed=1000 * k + rank)
        if dtype == torch.int16:  # gloo refuses int16 ("Invalid scalar type"); int32 wraps back the same
            expected = x.contiguous().to(torch.int32)
            dist.all_reduce(expected, op)
            expected = expected.to(dtype)
        elif op == ReduceOp.AVG and torch_before("2.11"):  # gloo before 2.11: "Cannot use ReduceOp.AVG with Gloo"
            expected = x.contiguous().clone()
            dist.all_reduce(expected, ReduceOp.SUM)
            expected /= world  # AVG as documented: the SUM divided by the world size
        else:
            expected = x.contiguous().clone()
            dist.all_reduce(expected, op)
        got = x.clone() if layout == "scalar" else x  # strided: reduce the view in place
        base = got._base if got._base is not None else got
        # to check that elements outside a strided view are not touched
        outside = base.clone() if layout == "strided" else None
        ring_allreduce(got, op)
        case = f"world {world}, rank {rank}: {length} x {dtype}, ReduceOp.{op.name}, {layout} input"
        if got.shape != x.shape or got.dtype != x.dtype:
            problems.append(f"{case}: result has shape {tuple(got.shape)} and {got.dtype}")
        elif dtype.is_floating_point:
            tol = 8 * world * torch.finfo(dtype).eps
            # float16/bfloat16 compared in float64; float32 and float64 as they are (no copies
            # of the large cases' millions of elements)
            wide = (lambda t: t) if dtype in (torch.float32, torch.float64) else torch.Tensor.double
            if not torch.allclose(wide(got), wide(expected), rtol=tol, atol=tol * 4):
                problems.append(f"{case}: got {got.flatten()[:6].tolist()}..., dist.all_reduce gives "
                                f"{expected.flatten()[:6].tolist()}...")
        elif not torch.equal(got.contiguous(), expected):
            problems.append(f"{case}: got {got.flatten()[:6].tolist()}..., dist.all_reduce gives "
                            f"{expected.flatten()[:6].tolist()}...")
        if layout == "strided" and length:
            mask = torch.ones(base.numel(), dtype=torch.bool)
            mask[1:2 * length:2] = False
            if not torch.equal(base[mask], outside[mask]):
                problems.append(f"{case}: elements outside the strided view changed")
    return problems


@pytest.mark.exercise("7.3")
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_ring_allreduce_matches_dist_all_reduce(world):
    problems = run_ranks(_check_cases, world, _cases(world), timeout=5, deadline=60)
    first = next((p for rank in problems for p in rank), None)
    assert first is None, first


def _large(lengths: list[int]) -> list[str]:
    return _check_cases([(n, dtype, op, "contiguous") for n in lengths
                         for dtype, op in ((torch.float32, ReduceOp.SUM), (torch.int32, ReduceOp.MAX))])


@pytest.mark.exercise("7.3")
@pytest.mark.parametrize("world, length", [(3, 3 * (1 << 20) + 5), (3, 3 * (1 << 20) + 1), (4, 4 * (1 << 20) + 2)])
def test_ring_allreduce_large_uneven_buffers(world, length):
    # millions of elements: chunks of unequal sizes, bigger than the reference ring's 2 MiB pieces
    # (minikernel.distributed.pieces), which then cuts neighbouring chunks into different numbers
    # of pieces: 3M + 1 over 3 ranks gives chunks of 1M + 1, 1M, 1M float32 elements, i.e. 3, 2, 2
    # pieces; 4M + 2 over 4 ranks 3, 3, 2, 2
    problems = run_ranks(_large, world, [length], timeout=10, deadline=60)
    first = next((p for rank in problems for p in rank), None)
    assert first is None, first


def _traffic(length: int) -> tuple[int, int, int, int]:
    """In a rank: (sent, received) counted by the Ring, and what the ring schedule says."""
    rank, world = dist.get_rank(), dist.get_world_size()
    x = torch.arange(length, dtype=torch.int64) * (rank + 1)
    ring = Ring.of(None, "ring_allreduce")
    chunks = list(x.tensor_split(world))
    sizes = [c.numel() for c in chunks]
    ring_allreduce_chunks(chunks, ReduceOp.SUM, ring)
    assert torch.equal(x, torch.arange(length) * sum(range(1, world + 1))), "wrong result"
    # scatter-reduce: sends every chunk but (r + 1); allgather: every chunk but (r + 2)
    want_sent = 2 * length - sizes[(rank + 1) % world] - sizes[(rank + 2) % world]
    want_received = 2 * length - sizes[rank] - sizes[(rank + 1) % world]
    return ring.sent, ring.received, want_sent, want_received


@pytest.mark.exercise("7.3")
@pytest.mark.parametrize("world, length", [(2, 10), (3, 11), (4, 4), (4, 2)])
def test_ring_moves_two_n_minus_one_over_n_of_the_buffer(world, length):
    # not more (gathering everything), not less (letting dist.all_reduce do the work)
    for rank, (sent, received, want_sent, want_received) in enumerate(run_ranks(_traffic, world, length)):
        assert (sent, received) == (want_sent, want_received), (
            f"rank {rank} of {world} sent {sent} and received {received} elements of {length}; the ring "
            f"sends {want_sent} and receives {want_received} (2(N-1)/N of the buffer)")


def _subgroup(members: list[int]) -> list | None:
    group = dist.new_group(members)  # every rank must call new_group, members or not
    if dist.get_rank() not in members:
        return None
    x = torch.arange(7, dtype=torch.int64) * (dist.get_rank() + 1) - 3
    expected = x.clone()
    dist.all_reduce(expected, ReduceOp.MAX, group=group)
    ring_allreduce(x, ReduceOp.MAX, group=group)
    return [x.tolist(), expected.tolist()]


@pytest.mark.exercise("7.3")
@pytest.mark.parametrize("members", [[1, 3], [0, 2, 3]])
def test_ring_allreduce_in_a_subgroup(members):
    for rank, result in enumerate(run_ranks(_subgroup, 4, members)):
        if rank in members:
            got, expected = result
            assert got == expected, f"rank {rank} in group {members}: got {got}, dist.all_reduce gives {expected}"


def _notes_example() -> list[int]:
    x = torch.arange(1, 5) + 4 * dist.get_rank()
    ring_allreduce(x)
    return x.tolist()


@pytest.mark.exercise("7.3")
def test_ring_allreduce_notes_example():
    assert run_ranks(_notes_example, 4) == [[28, 32, 36, 40]] * 4
