"""What a ``DataLoader`` needs for an ``IterableDataset`` (a stream: ``__iter__``, no indices).

Nothing is sampled: each process that loads (the main one, or each worker) iterates its
own copy of the dataset and cuts the stream into batches of ``batch_size`` (the last one
shorter unless ``drop_last``). With workers, every copy yields everything unless the
dataset splits the work itself with ``get_worker_info()`` (in ``__iter__`` or a
``worker_init_fn``); batches come back in turn, worker 0, 1, ..., 0, 1, ..., and a worker
whose stream has ended is skipped from then on (``torch.utils.data.DataLoader`` does the same).

The worker loop (exercise 10.2) loads ``[dataset[i] for i in indices]``: for a stream,
``dataset`` is an ``IterableFetcher`` and each task's one "index" is the epoch number,
so ``fetcher[epoch]`` is the next batch of that epoch's iterator, and the end of the
stream is an ``IterationEnd`` error the loop sends home like any other.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any


class IterationEnd(Exception):
    """A worker's stream has no more batches (torch's ``_IterableDatasetStopIteration``)."""


def check_iterable_options(shuffle: Any, sampler: Any, batch_sampler: Any) -> None:
    """torch's refusals for an ``IterableDataset``: no ``shuffle``, ``sampler`` or ``batch_sampler``
    (there are no indices to shuffle or sample; the dataset decides the order)."""
    if shuffle not in {False, None}:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                         f"shuffle={shuffle}")
    if sampler is not None:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                         f"sampler={sampler}")
    if batch_sampler is not None:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                         f"batch_sampler={batch_sampler}")


def iterable_length(dataset: Any, batch_size: int | None, drop_last: bool) -> int:
    """``len(loader)`` for a stream: ``len(dataset)`` (a TypeError if it has none) in batches,
    rounded down with ``drop_last``, up without — what one process would yield."""
    length = len(dataset)
    if batch_size is None:
        return length
    return length // batch_size if drop_last else math.ceil(length / batch_size)


class EpochTasks:
    """The "batch sampler" of a stream: ``[epoch]`` forever (the workers' streams decide the end)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[list[int]]:
        return itertools.repeat([self.epoch])


class IterableFetcher:
    """Stands in for the dataset in a loading process: ``fetcher[epoch]`` is the next batch of
    samples (a list of up to ``batch_size``; one sample when ``batch_size`` is None).

    A new epoch number starts a new ``iter(dataset)``; an empty batch, or a short one with
    ``drop_last``, raises ``IterationEnd``, and so does every later call of that epoch.
    """

    def __init__(self, dataset: Any, batch_size: int | None, drop_last: bool) -> None:
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.epoch: int | None = None
        self.iterator: Iterator | None = None

    def start(self, epoch: int) -> None:
        """Begin ``epoch``: a fresh iterator over the dataset (its ``__iter__`` runs now)."""
        self.epoch, self.iterator = epoch, iter(self.dataset)

    def __getitem__(self, epoch: int) -> Any:
        if epoch != self.epoch:
            self.start(epoch)
        if self.iterator is None:
            raise IterationEnd(f"the dataset's iterator of epoch {epoch} has ended")
        if self.batch_size is None:
            try:
                return next(self.iterator)
            except StopIteration:
                self.iterator = None
                raise IterationEnd(f"the dataset's iterator of epoch {epoch} has ended") from None
        batch = list(itertools.islice(self.iterator, self.batch_size))
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            self.iterator = None
            raise IterationEnd(f"the dataset's iterator of epoch {epoch} has ended")
        return batch
