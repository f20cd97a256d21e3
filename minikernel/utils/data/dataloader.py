"""``DataLoader``: batches from a map-style dataset, in this process or in worker processes.

How torch's multi-process loader fits together, and this one too:

* The main process walks a **batch sampler** (``BatchSampler`` over a sequential or
  random sampler) and sends each batch's indices, numbered 0, 1, 2, ..., to the
  workers' **index queues** in turn (worker 0, 1, ..., 0, 1, ...).
* It keeps ``prefetch_factor × num_workers`` tasks outstanding: at start it sends that
  many, then one more each time it hands out a batch.
* Workers (``worker.worker_loop``) load and collate, and put ``(number, batch)`` on
  one shared **data queue**, in whatever order they finish.
* ``__next__`` hands out batch ``rcvd_idx``: stashed if it came early, else it reads
  the data queue until it arrives (``next_in_order``), re-raising a worker's error.
  While waiting it checks that the workers are alive, and ``timeout``.
* At the end of an epoch the workers get ``None`` and are joined — unless
  ``persistent_workers``, which keeps them (and their copy of the dataset) for the
  next epoch, saving the start-up.
* With ``pin_memory`` (and an accelerator) torch copies each batch into page-locked
  *host* memory in a thread of the main process, so the later ``.to("cuda",
  non_blocking=True)`` can be a DMA transfer that overlaps compute. The data stays in
  RAM; nothing is put on the GPU. Here the main process pins the batch itself.
"""
from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils.data import (
    BatchSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    default_collate,
    default_convert,
)
from torch.utils.data.dataloader import _InfiniteConstantSampler

from minikernel.course.exercise import exercise

from . import iterable as It
from .worker import ExceptionWrapper, worker_main

_POLL_S = 0.5  # how often a waiting main process checks that its workers are alive


@exercise("10.3")
def next_in_order(rcvd_idx: int, reorder: dict[int, Any], receive: Callable[[], tuple[int, Any]]) -> Any:
    """Batch number ``rcvd_idx``, although workers deliver batches out of order.

    If ``rcvd_idx`` is already in ``reorder`` (it arrived early), take it out of the
    dict. Otherwise call ``receive()`` — it returns the next ``(idx, data)`` from the
    data queue — and put each arrival into ``reorder`` until ``rcvd_idx`` has come; take
    it out. If what you took out is an ``ExceptionWrapper``, call its ``reraise()``
    (the worker's error, with its traceback, raised here); else return it. Batches
    with other numbers stay in ``reorder`` for later calls.

    Matches the ordering in ``torch.utils.data.dataloader._MultiProcessingDataLoaderIter
    ._next_data`` (with ``in_order=True``). ≈6 lines.
    """
    # TODO(10.3): ≈6 lines
    raise NotImplementedError("exercise 10.3 (next_in_order) is not implemented yet")


class DataLoader:
    """Batches of a map-style dataset or a stream (``IterableDataset``), optionally loaded by
    worker processes.

    Arguments, defaults and errors as ``torch.utils.data.DataLoader`` (without pin-memory
    threads, ``in_order=False`` or datapipes). With the same seed or ``generator`` it yields
    the same batches, in the same order, as torch's. A stream is cut into batches by each
    loading process (``iterable.py``).
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None, sampler: Any = None,
                 batch_sampler: Any = None, num_workers: int = 0, collate_fn: Callable | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None, multiprocessing_context: Any = None,
                 generator: torch.Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False) -> None:
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            It.check_iterable_options(shuffle, sampler, batch_sampler)
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        sampler, batch_sampler = _samplers(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator)
        if self._iterable:
            sampler = _InfiniteConstantSampler()
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        auto = batch_size is not None or batch_sampler is not None
        if batch_sampler is not None:  # it decides the batches (torch: batch_size None, drop_last False)
            batch_size, drop_last = None, False
        self.batch_size, self.drop_last = batch_size, drop_last
        if auto:
            self.collate_fn = default_collate if collate_fn is None else collate_fn
        else:  # batch_size=None: one sample at a time, converted (not stacked) unless collate_fn says otherwise
            self.collate_fn = _Unbatched(default_convert if collate_fn is None else collate_fn)
        self.multiprocessing_context = _check_context(multiprocessing_context, num_workers)
        self.sampler = sampler
        self.batch_sampler = batch_sampler if batch_sampler is not None else (
            BatchSampler(sampler, batch_size, drop_last) if auto else None if self._iterable else _OneAtATime(sampler))
        self._iterator: _MultiProcessIter | None = None
        self._reported_length: int | None = None  #: len(dataset) of a stream, once len(loader) asked for it
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_initialized", False) and name in _FIXED_AFTER_INIT:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    def __len__(self) -> int:
        if self._iterable:
            # Remembered, as torch does: an iterator made after this warns once it yields more.
            self._reported_length = len(self.dataset)
            return It.iterable_length(self.dataset, self.batch_size, self.drop_last)
        return len(self.batch_sampler)

    def _tasks(self, epoch: int) -> Any:
        """What the main process hands out, one item per batch: lists of indices (from the batch
        sampler), or for a stream the epoch number, forever."""
        return It.EpochTasks(epoch) if self._iterable else self.batch_sampler

    def _loading(self) -> tuple[Any, Callable]:
        """What a loading process indexes and collates with: the dataset and ``collate_fn``, or for
        a stream a fetcher of whole batches and ``collate_fn`` applied to the one batch it returns."""
        if not self._iterable:
            return self.dataset, self.collate_fn
        fetcher = It.IterableFetcher(self.dataset, self.batch_size, self.drop_last)
        return fetcher, (_Unbatched(self.collate_fn) if self.batch_size is not None else self.collate_fn)

    def __iter__(self) -> Iterator:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers and self._iterator is not None and self._iterator.reusable():
            self._iterator.reset()
            return self._iterator
        iterator = _MultiProcessIter(self)
        if self.persistent_workers:
            self._iterator = iterator
        return iterator


_FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def _samplers(dataset: Any, batch_size: int | None, shuffle: bool | None, sampler: Any, batch_sampler: Any,
              drop_last: bool, generator: torch.Generator | None) -> tuple[Any, Any]:
    """torch's rules for ``shuffle``/``sampler``/``batch_sampler``/``batch_size``/``drop_last``, and its words."""
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
    elif batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
    elif batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                     or batch_size <= 0):
        raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
    if sampler is None:
        sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
    return sampler, batch_sampler


def _check_context(context: Any, num_workers: int) -> Any:
    """torch's checks of ``multiprocessing_context``: a start method's name or a context, with workers."""
    if context is None:
        return None
    if num_workers == 0:
        raise ValueError(f"multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                         f"but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                             f"but got multiprocessing_context={context!r}")
        return multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a string specifying "
                        f"the start method, but got multiprocessing_context={context!r}")
    return context


class _OneAtATime:
    """The batch sampler of ``batch_size=None``: each index alone (its sample is not batched)."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler

    def __iter__(self) -> Iterator[list]:
        return ([i] for i in self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


class _Unbatched:
    """``collate_fn`` for ``batch_size=None``: called on the one sample, not on a list (picklable for spawn)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, samples: list) -> Any:
        return self.fn(samples[0])


class _BaseIter:
    """What both iterators share: the sampler walk, the base seed, pinning."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        if loader.pin_memory and not torch.accelerator.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        self.pin = loader.pin_memory and torch.accelerator.is_available()
        self.epoch = 0
        self.sampler_iter = iter(loader._tasks(self.epoch))
        self.dataset, self.collate_fn = loader._loading()
        # Drawn here, after the sampler iterator is made but before it draws its permutation:
        # the same order as torch, so a seeded run shuffles the same way.
        self.base_seed = int(torch.empty((), dtype=torch.int64).random_(generator=loader.generator).item())
        self._start_count()

    def _start_count(self) -> None:
        """Count this epoch's batches against the stream length ``len(loader)`` reported, if it did."""
        self.num_yielded = 0
        self.reported_length = self.loader._reported_length if self.loader._iterable else None

    def __iter__(self) -> Iterator:
        return self

    def __next__(self) -> Any:
        batch = self._next_data()
        self.num_yielded += 1
        if self.reported_length is not None and self.num_yielded > self.reported_length:
            warnings.warn(self._length_message(), stacklevel=2)
        return batch

    def _next_data(self) -> Any:
        raise NotImplementedError

    def _length_message(self) -> str:
        """torch's words (compared are the batches handed out and ``len(dataset)``, as torch does)."""
        message = (f"Length of IterableDataset {self.loader.dataset} was reported to be {self.reported_length}"
                   f"(when accessing len(dataloader)), but {self.num_yielded} samples have been fetched. ")
        if self.loader.num_workers > 0:
            message += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
        return message

    def _pinned(self, batch: Any) -> Any:
        return torch.utils.data._utils.pin_memory.pin_memory(batch) if self.pin else batch


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if isinstance(self.dataset, It.IterableFetcher):
            self.dataset.start(self.epoch)  # as torch: the dataset's __iter__ runs in iter(loader)

    def _next_data(self) -> Any:
        indices = next(self.sampler_iter)
        try:
            return self._pinned(self.collate_fn([self.dataset[i] for i in indices]))
        except It.IterationEnd:
            raise StopIteration from None


_STREAM_ENDED = object()  #: what _next_batch returns for a task its worker could not fill


class _MultiProcessIter(_BaseIter):
    """Workers, index queues, one data queue, and the bookkeeping of what is outstanding."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self.owner_pid = os.getpid()  # a forked child inherits this object but must not stop its workers
        self.shut = True  # until the workers exist
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self.data_queue = context.Queue()
        self.index_queues = []
        self.workers = []
        for worker_id in range(loader.num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # never block at shutdown on indices nobody will read
            worker = context.Process(target=worker_main, daemon=True,
                                     args=(self.dataset, index_queue, self.data_queue, self.collate_fn,
                                           worker_id, self.base_seed, loader.num_workers, loader.worker_init_fn))
            worker.start()
            self.index_queues.append(index_queue)
            self.workers.append(worker)
        self.shut = False
        self._start_epoch()

    def _start_epoch(self) -> None:
        self.send_idx = 0  # number of the next task to send
        self.rcvd_idx = 0  # number of the next batch to hand out
        self.reorder: dict[int, Any] = {}  # batches that arrived before their turn
        self.exhausted = False  # the sampler (or every worker's stream) has no more batches
        self.task_worker: dict[int, int] = {}  # the worker each outstanding task went to
        self.ended: set[int] = set()  # workers whose stream has ended (IterableDataset)
        self.worker_cycle = itertools.cycle(range(self.loader.num_workers))
        for _ in range(self.loader.prefetch_factor * self.loader.num_workers):
            self._try_put_index()

    def reusable(self) -> bool:
        """Whether the last epoch ended cleanly (nothing in flight), so the workers can go on."""
        return not self.shut and self.exhausted and self.rcvd_idx == self.send_idx

    def reset(self) -> None:
        """A new epoch on the same workers (``persistent_workers``)."""
        self.epoch += 1
        self.sampler_iter = iter(self.loader._tasks(self.epoch))
        self._start_count()
        self._start_epoch()

    def _try_put_index(self) -> None:
        """Send the next task to the next worker in turn whose stream has not ended."""
        if self.exhausted:
            return
        for _ in range(self.loader.num_workers):
            worker_id = next(self.worker_cycle)
            if worker_id not in self.ended:
                break
        else:
            self.exhausted = True
            return
        try:
            indices = next(self.sampler_iter)
        except StopIteration:
            self.exhausted = True
            return
        self.index_queues[worker_id].put((self.send_idx, indices))
        self.task_worker[self.send_idx] = worker_id
        self.send_idx += 1

    def _receive(self) -> tuple[int, Any]:
        """The next ``(idx, data)`` from the data queue; a dead worker or a timeout raises."""
        start = time.monotonic()
        while True:
            try:
                idx, data = self.data_queue.get(timeout=_POLL_S)
            except queue.Empty:
                dead = [str(w.pid) for w in self.workers if not w.is_alive()]
                if dead:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(dead)}) exited unexpectedly") from None
                if self.loader.timeout > 0 and time.monotonic() - start > self.loader.timeout:
                    raise RuntimeError(f"DataLoader timed out after {self.loader.timeout} seconds") from None
                continue
            if idx is None:  # a worker's loop itself failed: nothing more will come from it
                self.shutdown()
                data.reraise()
            return idx, data

    def _next_data(self) -> Any:
        while True:
            if self.exhausted and self.rcvd_idx == self.send_idx:
                if not self.loader.persistent_workers:
                    self.shutdown()
                raise StopIteration
            if self.shut:
                raise RuntimeError("this DataLoader iterator was shut down; start a new one with iter(loader)")
            batch = self._next_batch()
            if batch is not _STREAM_ENDED:
                return self._pinned(batch)

    def _next_batch(self) -> Any:
        """Batch ``rcvd_idx``, or ``_STREAM_ENDED`` when its worker's stream had ended (that worker
        gets no more tasks)."""
        worker_id = self.task_worker.pop(self.rcvd_idx)
        try:
            return next_in_order(self.rcvd_idx, self.reorder, self._receive)
        except It.IterationEnd:
            self.ended.add(worker_id)
            return _STREAM_ENDED
        finally:
            # Even when the batch was a worker's error: it is used up, and the next one is due.
            self.rcvd_idx += 1
            self._try_put_index()

    def shutdown(self, wait: bool = True) -> None:
        """Tell every worker to stop, wait a little (``wait``), then terminate what is left."""
        if self.shut or os.getpid() != self.owner_pid:
            return
        self.shut = True
        if wait:
            for index_queue in self.index_queues:
                index_queue.put(None)
        for worker in self.workers:
            worker.join(timeout=5.0 if wait else 0)
            if worker.is_alive():
                worker.terminate()
                worker.join()
        for q in (*self.index_queues, self.data_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        # Often collected together with its queues (a reference cycle, e.g. through the
        # traceback of a batch's error): their feeder threads may have stopped already, so
        # a None put now would never reach the workers, and each join would wait its 5 s.
        # Nobody will read their batches: stop them at once.
        self.shutdown(wait=False)


# ExceptionWrapper is part of what next_in_order deals with; re-exported for its users.
__all__ = ["DataLoader", "ExceptionWrapper", "next_in_order"]
