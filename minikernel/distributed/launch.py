"""Start N ranks as real processes on this machine, run a function in each, collect.

``run_ranks(fn, world_size, *args)`` forks ``world_size`` processes. Each one sets
one thread (``torch.set_num_threads(1)``: N ranks on few cores would otherwise
fight over threads), waits until every rank has arrived, joins a gloo process
group through a ``FileStore`` in a fresh temporary directory (no port to clash),
calls ``fn(*args)``, and reports its return value or its exception back through
a pipe. The parent returns the values in rank order.

Nothing can hang the caller:

* the timeout (default 5 s) goes to ``init_process_group`` and bounds every wait
  of the collectives here; a rank that never joins makes the others raise within it;
* the parent waits at most ``deadline`` seconds for the reports, then kills what
  is left and says which ranks did not finish;
* children always leave with ``os._exit``, so no test runner or notebook code runs
  twice, and the temporary directory is removed;
* a child's output (prints, warnings, gloo's log lines) goes to a file, returned as
  ``Outcome.log``, never into the parent's terminal or notebook.

Exceptions come back as themselves (with the rank's traceback as a note). An
unfinished exercise in a rank (``NotImplementedError: exercise 7.3 ...``) is
re-raised as is, so a notebook cell or the grader names the exercise.
"""
from __future__ import annotations

import datetime
import importlib
import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import wait as wait_for
from typing import Any, Callable, Collection

import torch
import torch.distributed as dist

from ..course.exercise import stub_exercise_id
from .transport import CollectiveError

DEFAULT_TIMEOUT_S = 5.0
#: Where ``imports_first`` writes the modules a rank function needs imported before the fork.
_IMPORTS_FIRST = "__minikernel_imports_first__"


def imports_first(*modules: str) -> Callable[[Callable], Callable]:
    """Mark a rank function: :func:`launch` imports ``modules`` in its own process once,
    before it forks the ranks.

    For what a rank function imports late and slowly, e.g. ``torch._dynamo``, which
    torch's ``DistributedDataParallel`` imports when it wraps a model (about 1 s):
    imported before the fork, the ranks inherit it instead of each importing it; and a
    module-level import would make every process that imports the function's module
    pay, whether it launches ranks or not (the grader collects chapter 07's tests in
    one process before any exercise runs).

    Example::

        >>> @imports_first("torch._dynamo")
        ... def train_rank():
        ...     return DDP(ToyModel())(torch.randn(2, 10)).sum().item()
    """
    def mark(fn: Callable) -> Callable:
        setattr(fn, _IMPORTS_FIRST, modules)
        return fn
    return mark


class RankError(RuntimeError):
    """One or more ranks failed; ``outcomes`` holds every rank's result or error."""

    def __init__(self, message: str, outcomes: list["Outcome"] | None = None):
        super().__init__(message)
        self.outcomes = outcomes or []

    def __reduce__(self):
        return (RankError, (str(self), self.outcomes))


@dataclass
class Outcome:
    """What one rank reported."""

    rank: int
    value: Any = None
    error: BaseException | None = None
    traceback: str = ""   #: the rank's formatted traceback, when it raised
    seconds: float = 0.0  #: from the rank's start to its report (or to the parent giving up)
    log: str = ""         #: what the rank printed (stdout and stderr, warnings and gloo's logs included)

    @property
    def ok(self) -> bool:
        return self.error is None


def _check_in(store: dist.Store, stage: str, rank: int, world_size: int, timeout: datetime.timedelta) -> None:
    """Wait until every rank has reached ``stage``; name the missing ones on timeout."""
    store.set(f"minikernel/{stage}/{rank}", "1")
    keys = [f"minikernel/{stage}/{r}" for r in range(world_size)]
    try:
        store.wait(keys, timeout)
    except RuntimeError:
        missing = ", ".join(str(r) for r, k in enumerate(keys) if not store.check([k])) or "?"
        what = ("did not join the process group" if stage == "joined"
                else "did not finish connecting to the others")
        raise CollectiveError(
            f"rank {rank}: rank(s) {missing} {what} within {timeout.total_seconds():g} s. A rank that never "
            "starts (or dies first) cannot be waited for forever; check that every process was started and "
            "look at its output.") from None


def _init(store: dist.Store, rank: int, world_size: int, timeout: datetime.timedelta) -> None:
    """Join the gloo group; return only when *every* rank has joined it.

    The second check-in matters: a rank that returned from ``init_process_group`` and
    then died could otherwise break another rank's connection set-up half-way, which
    gloo reports late and obscurely.
    """
    _check_in(store, "joined", rank, world_size, timeout)
    try:
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size, timeout=timeout)
    except RuntimeError as err:
        raise CollectiveError(
            f"rank {rank}: joining the process group failed: a rank died or could not be reached while the "
            f"ranks were connecting. gloo: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from err
    _check_in(store, "connected", rank, world_size, timeout)


def _redirect_output(path: str) -> None:
    """Send this process's stdout and stderr (Python's and the C++ libraries') to ``path``.

    A forked rank shares its parent's output: in Jupyter, that is the kernel's
    channel, which a child must not write to, and gloo's log lines carry
    timestamps. The parent reads the file back into ``Outcome.log``.
    """
    log = open(path, "w", buffering=1)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log


def _child(fn: Callable, args: tuple, rank: int, world_size: int, store_path: str, timeout_s: float,
           absent: Collection[int], conn) -> None:
    """Body of one rank process. Always ends in ``os._exit``."""
    start, code = time.perf_counter(), 0
    _redirect_output(os.path.join(os.path.dirname(store_path), f"rank{rank}.log"))
    try:
        torch.set_num_threads(1)
        if rank in absent:  # started, but never joins: what do the others do?
            time.sleep(3600)
        timeout = datetime.timedelta(seconds=timeout_s)
        _init(dist.FileStore(store_path, world_size), rank, world_size, timeout)
        value = fn(*args)
        message = ("ok", value, "")
    except BaseException as err:  # noqa: BLE001 - everything goes back to the parent
        message, code = ("error", err, traceback.format_exc()), 1
    message += (time.perf_counter() - start,)
    try:
        data = pickle.dumps(message)
    except Exception as err:  # noqa: BLE001 - an unpicklable value or exception
        kind, what = message[0], message[1]
        text = f"{type(what).__name__}: {what}" if kind == "error" else f"a {type(what).__name__}"
        data = pickle.dumps(("error", RuntimeError(f"rank {rank} could not send back {text} ({err})"),
                             message[2], message[3]))
    try:
        conn.send_bytes(data)
        conn.close()
        if code == 0 and dist.is_initialized():
            dist.destroy_process_group()  # only after success: a broken group is left to os._exit
    finally:
        os._exit(code)


def launch(fn: Callable, world_size: int, *args, timeout: float = DEFAULT_TIMEOUT_S,
           deadline: float | None = None, absent: Collection[int] = ()) -> list[Outcome]:
    """Run ``fn(*args)`` in ``world_size`` forked rank processes; one ``Outcome`` per rank.

    Never raises for a failing rank (see ``run_ranks`` for that).

    Args:
        fn (callable): a module-level function; it runs after ``init_process_group``,
            so ``dist.get_rank()`` tells each call which rank it is. What it needs
            imported first (``imports_first``) is imported here, before the fork.
        world_size (int): number of ranks, at least 1.
        *args: passed to every ``fn`` call (picklable is not needed: fork copies them).
        timeout (float, optional): seconds for ``init_process_group`` and each wait. Default: ``5.0``
        deadline (float, optional): seconds the parent waits for all reports before it
            kills the rest. Default: ``4 * timeout + 20``
        absent (collection of int, optional): ranks that start but never join (they
            sleep until killed), to see what the others do. Default: ``()``

    Example::

        >>> def rank_and_size():
        ...     return dist.get_rank(), dist.get_world_size()
        >>> [o.value for o in launch(rank_and_size, 2)]
        [(0, 2), (1, 2)]
    """
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be a positive int, got {world_size!r}")
    deadline = 4 * timeout + 20 if deadline is None else deadline
    for name in getattr(fn, _IMPORTS_FIRST, ()):
        importlib.import_module(name)
    context = multiprocessing.get_context("fork")
    tmp = tempfile.mkdtemp(prefix="minikernel-dist-")
    processes, pipes, outcomes = [], {}, {}
    start = time.perf_counter()
    try:
        for rank in range(world_size):
            reader, writer = context.Pipe(duplex=False)
            p = context.Process(target=_child, args=(fn, args, rank, world_size, os.path.join(tmp, "store"),
                                                     timeout, frozenset(absent), writer), daemon=True)
            p.start()
            writer.close()
            processes.append(p)
            pipes[reader] = rank
        while set(pipes.values()) - set(absent):  # absent ranks never report: stop once the rest have
            left = deadline - (time.perf_counter() - start)
            if left <= 0:
                break
            for reader in wait_for(list(pipes), timeout=left):
                rank = pipes.pop(reader)
                outcomes[rank] = _read(reader, rank, processes[rank])
        for rank in pipes.values():
            why = ("was told not to join (absent) and was stopped" if rank in absent
                   else f"did not finish within {deadline:g} s and was stopped")
            outcomes[rank] = Outcome(rank, error=CollectiveError(f"rank {rank} {why}"),
                                     seconds=time.perf_counter() - start)
    finally:
        for p in processes:
            if p.is_alive():
                p.kill()
            p.join()
        for reader in pipes:
            reader.close()
        for rank, outcome in outcomes.items():
            try:
                with open(os.path.join(tmp, f"rank{rank}.log"), errors="replace") as log:
                    outcome.log = log.read()
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
    return [outcomes[r] for r in range(world_size)]


def _read(reader, rank: int, process) -> Outcome:
    """One rank's report, or an Outcome that says it died without one."""
    try:
        kind, payload, tb, seconds = pickle.loads(reader.recv_bytes())
    except (EOFError, OSError):
        process.join(1)
        return Outcome(rank, error=CollectiveError(
            f"rank {rank} exited (exit code {process.exitcode}) without reporting a result"))
    except Exception as err:  # noqa: BLE001 - a report that cannot be rebuilt here
        return Outcome(rank, error=RuntimeError(f"rank {rank}'s report could not be read: {err!r}"))
    finally:
        reader.close()
    if kind == "ok":
        return Outcome(rank, value=payload, seconds=seconds)
    return Outcome(rank, error=payload, traceback=tb, seconds=seconds)


def raise_for_errors(outcomes: list[Outcome]) -> None:
    """Re-raise what the ranks raised: an unfinished exercise as itself, else a RankError."""
    failed = [o for o in outcomes if not o.ok]
    if not failed:
        return
    for o in failed:
        if stub_exercise_id(o.error):
            err = o.error
            err.add_note(f"(raised in rank {o.rank} of {len(outcomes)})")
            raise err
    lines = "\n".join(f"  rank {o.rank}: {type(o.error).__name__}: {o.error}" for o in failed)
    err = RankError(f"{len(failed)} of {len(outcomes)} ranks failed:\n{lines}", outcomes)
    first = failed[0]
    if first.traceback:
        err.add_note(f"traceback in rank {first.rank}:\n{first.traceback.rstrip()}")
    raise err


def run_ranks(fn: Callable, world_size: int, *args, timeout: float = DEFAULT_TIMEOUT_S,
              deadline: float | None = None) -> list[Any]:
    """Run ``fn(*args)`` in ``world_size`` rank processes; return their values in rank order.

    Like ``launch`` (same arguments), but raises when a rank fails: an unfinished
    exercise's NotImplementedError as itself, anything else as a ``RankError``
    listing every failed rank's error.

    Example::

        >>> def allreduced():
        ...     t = torch.tensor([dist.get_rank() + 1]); dist.all_reduce(t); return t.item()
        >>> run_ranks(allreduced, 4)
        [10, 10, 10, 10]
    """
    outcomes = launch(fn, world_size, *args, timeout=timeout, deadline=deadline)
    raise_for_errors(outcomes)
    return [o.value for o in outcomes]
