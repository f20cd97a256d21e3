"""Failures are errors, never hangs: dead ranks, silent ranks, absent ranks, mismatches.

No exercise marker: everything here happens before or around the ring (metadata
exchange, the naive method, the launcher), so it must pass in both modes. Each
run has a short timeout (2 s) and a parent deadline; a rank that hung would be
killed at the deadline and reported as "did not finish", which fails the test.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from minikernel.distributed import (CollectiveError, MismatchError, RankError, Ring, launch, naive_allreduce,
                                    ring_allreduce, run_ranks)
from minikernel.distributed.launch import imports_first
from minikernel.distributed.transport import check_agreement

TIMEOUT = 2.0
DEADLINE = 20.0  # far past every timeout: reaching it means something hung


def _errors(outcomes, skip=()):
    """Every rank's error (ranks in ``skip`` aside); fails if one hung or succeeded."""
    errors = {}
    for o in outcomes:
        if o.rank in skip:
            continue
        assert o.error is not None, f"rank {o.rank} returned {o.value!r} instead of raising"
        assert "did not finish" not in str(o.error), f"rank {o.rank} hung: {o.error}"
        errors[o.rank] = o.error
    return errors


# ---------------------------------------------------------------- mismatches
def _reduce_length_by_rank(fn_name: str) -> None:
    fn = {"ring": ring_allreduce, "naive": naive_allreduce}[fn_name]
    fn(torch.ones(4 + dist.get_rank()))


@pytest.mark.parametrize("fn_name", ["ring", "naive"])
def test_different_lengths_raise_on_every_rank(fn_name):
    errors = _errors(launch(_reduce_length_by_rank, 3, fn_name, timeout=TIMEOUT, deadline=DEADLINE))
    for rank, err in errors.items():
        assert type(err) is MismatchError, f"rank {rank}: {err!r}"
        assert "rank 0: 4 elements of torch.float32" in str(err) and "rank 2: 6 elements" in str(err)
        assert "Nothing was sent" in str(err)


def _reduce_dtype_by_rank() -> None:
    ring_allreduce(torch.ones(4, dtype=torch.float32 if dist.get_rank() else torch.int32))


def test_different_dtypes_raise_on_every_rank():
    # same byte count: sent anyway, the bytes would silently be reinterpreted
    errors = _errors(launch(_reduce_dtype_by_rank, 2, timeout=TIMEOUT, deadline=DEADLINE))
    assert set(errors) == {0, 1}
    for err in errors.values():
        assert type(err) is MismatchError and "torch.int32" in str(err) and "torch.float32" in str(err)


def _reduce_op_by_rank() -> None:
    ring_allreduce(torch.ones(3), ReduceOp.MAX if dist.get_rank() else ReduceOp.SUM)


def test_different_ops_raise_on_every_rank():
    errors = _errors(launch(_reduce_op_by_rank, 2, timeout=TIMEOUT, deadline=DEADLINE))
    assert all(type(e) is MismatchError and "op MAX" in str(e) and "op SUM" in str(e) for e in errors.values())


def _reduce(dtype_name: str, op_name: str) -> None:
    ring_allreduce(torch.ones(3, dtype=getattr(torch, dtype_name)), getattr(ReduceOp, op_name))


@pytest.mark.parametrize("dtype_name, op_name, error, text", [
    ("int64", "AVG", RuntimeError, "AVG needs a floating-point tensor"),
    ("bool", "SUM", TypeError, "integer and floating-point"),
    ("complex64", "SUM", TypeError, "complex64"),
])
def test_unsupported_dtype_or_op_raise_on_every_rank(dtype_name, op_name, error, text):
    errors = _errors(launch(_reduce, 2, dtype_name, op_name, timeout=TIMEOUT, deadline=DEADLINE))
    for err in errors.values():
        assert type(err) is error and text in str(err), repr(err)


def _int_avg_in_torch() -> str:
    t = torch.ones(3, dtype=torch.int64)
    try:
        dist.all_reduce(t, ReduceOp.AVG)
    except RuntimeError as err:
        return type(err).__name__
    return "no error"


def test_integer_avg_fails_in_torch_too():
    assert run_ranks(_int_avg_in_torch, 2, timeout=TIMEOUT) == ["RuntimeError"] * 2


# ---------------------------------------------------------------- lost ranks
def _die_or_reduce(die: int, after_metadata: bool, fn_name: str) -> list:
    t = torch.arange(8.0)
    if dist.get_rank() == die:
        if after_metadata:  # take part in the metadata exchange, then vanish mid-collective
            check_agreement(t, ReduceOp.SUM, Ring.of(None, f"{fn_name}_allreduce"))
        os._exit(7)
    {"ring": ring_allreduce, "naive": naive_allreduce}[fn_name](t)
    return t.tolist()


@pytest.mark.parametrize("after_metadata", [False, True], ids=["before", "during"])
@pytest.mark.parametrize("die", [0, 2])
def test_a_dead_rank_makes_the_naive_method_raise_everywhere(die, after_metadata):
    start = time.perf_counter()
    outcomes = launch(_die_or_reduce, 3, die, after_metadata, "naive", timeout=TIMEOUT, deadline=DEADLINE)
    errors = _errors(outcomes)
    assert "exited (exit code 7)" in str(errors[die])
    for rank, err in errors.items():
        if rank != die:
            assert isinstance(err, CollectiveError), f"rank {rank}: {err!r}"
            assert "lost its connection" in str(err) or "waited" in str(err) or "not all answered" in str(err), err
    assert time.perf_counter() - start < DEADLINE


def test_a_dead_rank_makes_ring_allreduce_raise_everywhere():
    # it dies before the metadata exchange: every other rank's ring_allreduce raises there
    errors = _errors(launch(_die_or_reduce, 4, 1, False, "ring", timeout=TIMEOUT, deadline=DEADLINE))
    for rank in (0, 2, 3):
        assert isinstance(errors[rank], CollectiveError), f"rank {rank}: {errors[rank]!r}"
        assert "ring_allreduce" in str(errors[rank])


def _silent_or_reduce(silent: int) -> list:
    if dist.get_rank() == silent:
        time.sleep(TIMEOUT + 0.5)  # joined, alive, but never calls the collective (in time)
        return []
    t = torch.ones(5)
    naive_allreduce(t)
    return t.tolist()


def test_a_silent_rank_makes_the_others_time_out():
    outcomes = launch(_silent_or_reduce, 3, 1, timeout=TIMEOUT, deadline=DEADLINE)
    errors = _errors(outcomes, skip={1})
    for rank, err in errors.items():
        assert isinstance(err, CollectiveError), f"rank {rank}: {err!r}"
        assert f"{TIMEOUT:g} s" in str(err), err  # says how long it waited
        assert outcomes[rank].seconds < DEADLINE / 2


def _reduce_ones() -> list:
    t = torch.ones(2)
    ring_allreduce(t)
    return t.tolist()


def test_a_rank_that_never_joins_is_named():
    outcomes = launch(_reduce_ones, 3, timeout=TIMEOUT, deadline=DEADLINE, absent={2})
    errors = _errors(outcomes)
    for rank in (0, 1):
        assert isinstance(errors[rank], CollectiveError)
        assert "rank(s) 2 did not join the process group within 2 s" in str(errors[rank])
        assert outcomes[rank].seconds < DEADLINE / 2
    assert "absent" in str(errors[2])


# ---------------------------------------------------------------- the launcher
def _rank_info() -> tuple:
    return dist.get_rank(), dist.get_world_size(), torch.get_num_threads()


def test_run_ranks_returns_values_in_rank_order_with_one_thread_each():
    assert run_ranks(_rank_info, 3) == [(0, 3, 1), (1, 3, 1), (2, 3, 1)]


IMPORTED_FIRST = "minikernel_test_imported_first"


@imports_first(IMPORTED_FIRST)
def _who_imported_it() -> tuple[int, int]:
    return sys.modules[IMPORTED_FIRST].PID, os.getpid()  # the rank itself imports nothing


def test_a_marked_module_is_imported_once_before_the_ranks_fork(tmp_path, monkeypatch):
    (tmp_path / f"{IMPORTED_FIRST}.py").write_text("import os\nPID = os.getpid()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, IMPORTED_FIRST, raising=False)
    reports = run_ranks(_who_imported_it, 2)
    assert [importer for importer, _rank in reports] == [os.getpid(), os.getpid()], reports
    assert all(rank != os.getpid() for _importer, rank in reports)


def test_importing_the_ddp_helpers_does_not_import_torch_dynamo():
    """torch._dynamo (about 1 s) is imported by ``launch`` for the rank functions marked
    with ``imports_first``, not by importing their modules: the grader collects chapter
    07's tests in one process before any exercise runs."""
    modules = ["ddp", "ddp_compare", "checkpointing", "model_parallel", "examples", "toy_mp"]
    code = (f"import sys; import {', '.join(f'minikernel.distributed.{m}' for m in modules)}; "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def _raise_in_rank(kind: str) -> None:
    if dist.get_rank() == 1:
        if kind == "stub":
            raise NotImplementedError("exercise 7.3 (ring_allreduce_chunks) is not implemented yet")
        raise KeyError("missing")


def test_an_unfinished_exercise_in_a_rank_is_raised_as_itself():
    with pytest.raises(NotImplementedError, match=r"exercise 7\.3 \(ring_allreduce_chunks\)"):
        run_ranks(_raise_in_rank, 2, "stub")


def test_other_errors_come_back_per_rank():
    with pytest.raises(RankError, match="1 of 2 ranks failed") as info:
        run_ranks(_raise_in_rank, 2, "other")
    outcomes = info.value.outcomes
    assert outcomes[0].ok and type(outcomes[1].error) is KeyError
    assert "_raise_in_rank" in outcomes[1].traceback


def _endless() -> None:
    while True:
        time.sleep(0.05)


def test_a_rank_that_never_returns_is_stopped_at_the_deadline():
    outcomes = launch(_endless, 2, timeout=TIMEOUT, deadline=3)
    assert all("did not finish within 3 s" in str(o.error) for o in outcomes)


def test_ring_needs_a_process_group():
    with pytest.raises(RuntimeError, match="init_process_group"):
        Ring.of()
    with pytest.raises(ValueError, match="world_size"):
        launch(_rank_info, 0)
