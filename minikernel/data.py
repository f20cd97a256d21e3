"""Chapter 08's data-loading examples, for ``torch.utils.data.DataLoader``.

minikernel has no DataLoader of its own: chapter 08 studies torch's, with these
small datasets and samplers (the ones of the course notes), kept here so that
worker processes can import them and the notebook can show their source.

A ``DataLoader`` turns a *dataset* (``__len__`` + ``__getitem__``) into batches:

* a **sampler** yields one index at a time (``SequentialSampler``, ``RandomSampler``,
  or yours); ``batch_size``, ``drop_last`` and ``shuffle`` group them into batches;
* or a **batch sampler** yields whole lists of indices, and then ``batch_size``,
  ``shuffle``, ``sampler`` and ``drop_last`` must be left alone (ValueError);
* ``collate_fn`` receives the list of *samples* of one batch (not their indices) and
  returns the batch (default: stack them into tensors).
"""
from __future__ import annotations

import math
from typing import Iterator

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, Sampler, get_worker_info


class NegatedPairs(Dataset):
    """Sample ``i`` is ``np.array([-2*i, -2*i])``, for ``i`` in ``range(length)`` (the notes' dataset).

    Args:
        length (int): what ``len()`` reports. ``__getitem__`` does not check its index,
            so a sampler that goes past the end is not caught — as in the notes.
    """

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, idx: int) -> np.ndarray:
        return np.array([-idx * 2, -idx * 2])


class NeighbourBatches(Sampler):
    """A batch sampler yielding ``[i, i + 1]`` for ``i`` in ``range(batch_nums)`` (the notes' sampler).

    It defines no ``__len__``: iterating a DataLoader over it works, ``len(loader)`` is a
    TypeError.

    Args:
        batch_nums (int): how many batches to yield.
    """

    def __init__(self, batch_nums: int) -> None:
        self.batch_nums = batch_nums

    def __iter__(self) -> Iterator[list[int]]:
        for i in range(self.batch_nums):
            yield [i, i + 1]


class WhoLoadedMe(Dataset):
    """Sample ``i`` is ``(i, worker id, a random draw)``: which worker process loaded it,
    and a number drawn from numpy's global generator in that worker (worker id -1: the
    main process, with ``num_workers=0``).

    Workers are forked copies of the main process. Current torch seeds ``random``,
    torch and numpy in each worker from ``base_seed`` and the worker id, where
    ``base_seed`` comes from the main process's torch generator: the draws differ per
    worker, and ``torch.manual_seed`` makes them repeat.

    Args:
        length (int): number of samples.
    """

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, idx: int) -> tuple[int, int, float]:
        info = get_worker_info()
        return idx, -1 if info is None else info.id, float(np.random.rand())


class RangeStream(IterableDataset):
    """An iterable dataset: the integers ``start, start + 1, ..., end - 1``, in order.

    Each worker process iterates its own copy of the dataset: with two workers and
    nothing else, every number comes out twice. ``split_range_per_worker`` as the
    ``worker_init_fn`` gives each worker its own slice (torch's documentation example).

    Args:
        start (int): first number.
        end (int): one past the last number.
    """

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.end))


def split_range_per_worker(worker_id: int) -> None:
    """A ``worker_init_fn`` for ``RangeStream``: worker ``k`` of ``n`` keeps the k-th of n
    contiguous slices. It runs in the worker, before the first sample, on the worker's
    copy of the dataset (``get_worker_info().dataset``)."""
    info = get_worker_info()
    dataset = info.dataset
    overall_start, overall_end = dataset.start, dataset.end
    per_worker = int(math.ceil((overall_end - overall_start) / info.num_workers))
    dataset.start = overall_start + worker_id * per_worker
    dataset.end = min(dataset.start + per_worker, overall_end)
