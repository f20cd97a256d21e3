"""What runs in a DataLoader worker process, and how its errors reach the main process.

Each worker owns an *index queue* (the main process puts ``(task number, list of
dataset indices)`` on it, and ``None`` to say "stop") and shares one *data queue* with
the others (the worker puts ``(task number, batch)`` on it). Everything crossing a
queue is pickled; a tensor's storage travels through shared memory.

An exception cannot be raised across a process boundary, and its traceback does not
pickle. So a worker catches it, formats the traceback into text, and sends an
``ExceptionWrapper`` in place of the batch; the main process raises it again with the
worker's traceback in the message (``torch._utils.ExceptionWrapper`` does the same).
"""
from __future__ import annotations

import random
import sys
import traceback
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data._utils import worker as torch_worker

from minikernel.course.exercise import exercise

from .iterable import IterableFetcher

_worker_info: Any = None  #: set in a worker process (``worker_main``)


def get_worker_info() -> Any:
    """In a DataLoader worker: its ``id``, ``num_workers``, ``seed`` and ``dataset`` (a copy); None in the
    main process. Matches ``torch.utils.data.get_worker_info``."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, with its traceback as text (picklable).

    Matches ``torch._utils.ExceptionWrapper``: ``reraise()`` raises the same exception
    type with ``"Caught ValueError in DataLoader worker process 0.\\nOriginal Traceback
    (most recent call last): ..."`` as its message.
    """

    def __init__(self, exc_info: tuple | None = None, where: str = "in background") -> None:
        exc_type, exc_value, tb = exc_info if exc_info is not None else sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc_value, tb))
        self.where = where

    def reraise(self) -> None:
        """Raise the wrapped exception's type here, with the worker's traceback in the message."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyError(msg)  # KeyError would print the message through repr(): keep the newlines
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


@exercise("10.2")
def worker_loop(dataset: Any, index_queue: Any, data_queue: Any, collate_fn: Callable, worker_id: int) -> None:
    """A worker's loop: take tasks from ``index_queue`` until ``None``; answer on ``data_queue``.

    A task is ``(idx, indices)``: load ``[dataset[i] for i in indices]``, pass the list
    to ``collate_fn``, and put ``(idx, batch)`` on ``data_queue``. If loading or
    collating raises an ``Exception``, put ``(idx, ExceptionWrapper(where=f"in
    DataLoader worker process {worker_id}"))`` instead — created inside the ``except``
    block, where ``sys.exc_info()`` still holds the error — and go on with the next
    task. Only ``Exception``: a ``BaseException`` that is not one (``KeyboardInterrupt``,
    ``SystemExit``) is not caught, it leaves the loop with nothing sent, as in torch.
    ``None`` ends the loop (return; the process then exits).

    The queues are ``multiprocessing`` queues in a worker and may be ``queue.Queue``
    in a test: use only ``get()`` and ``put()``.

    Matches the map-style part of ``torch.utils.data._utils.worker._worker_loop``. ≈10 lines.
    """
    # TODO(10.2): ≈10 lines
    raise NotImplementedError("exercise 10.2 (worker_loop) is not implemented yet")


def worker_main(dataset: Any, index_queue: Any, data_queue: Any, collate_fn: Callable, worker_id: int,
                base_seed: int, num_workers: int = 1, worker_init_fn: Callable[[int], None] | None = None) -> None:
    """Entry point of a worker process: set it up like torch does, then run ``worker_loop``.

    One thread per worker (N workers × all cores' threads would oversubscribe the CPU),
    and seeds ``base_seed + worker_id`` for ``random`` and torch, so each worker draws
    different numbers and a seeded run repeats. ``get_worker_info()`` (ours and torch's)
    then describes this worker, and ``worker_init_fn(worker_id)`` runs before the first task.
    """
    torch.set_num_threads(1)
    seed = base_seed + worker_id
    random.seed(seed)
    torch.manual_seed(seed)
    global _worker_info
    own = dataset.dataset if isinstance(dataset, IterableFetcher) else dataset  # the user's copy, not our fetcher
    _worker_info = torch_worker.WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=own)
    torch_worker._worker_info = _worker_info  # datasets that ask torch.utils.data.get_worker_info() see it too
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        worker_loop(dataset, index_queue, data_queue, collate_fn, worker_id)
    except KeyboardInterrupt:
        pass  # the main process was interrupted too and shuts the workers down
    except Exception:
        # Numbered None: the main process raises it at once instead of finding a dead worker.
        data_queue.put((None, ExceptionWrapper(where=f"in the loop of DataLoader worker process {worker_id}")))
    finally:
        # Do not wait at exit for batches nobody will read (an iteration given up early).
        data_queue.cancel_join_thread()
        data_queue.close()
