"""``DataLoader`` over an ``IterableDataset``, against ``torch.utils.data.DataLoader``: the
batches (values and order) in one process and with workers that split the stream through
``get_worker_info()`` or not at all, ``batch_size=None``, ``drop_last``, ``len()``, a
stream shorter in one worker than another, persistent workers over two epochs, and
torch's refusals of ``shuffle``/``sampler``/``batch_sampler``."""
from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch.utils.data import BatchSampler, IterableDataset, SequentialSampler, get_worker_info

import minikernel.utils.data as mkdata
from minikernel.data import RangeStream, split_range_per_worker

WAIT_S = 20  # the loader's own timeout: a lost batch fails with its message, not a hang


class ShardedRange(IterableDataset):
    """``range(start, end)``, worker ``k`` of ``n`` taking every n-th number from ``start + k``,
    tagged with the worker that loaded it (as ``get_worker_info`` reports it; -1 in the main process)."""

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    def __len__(self) -> int:
        return self.end - self.start

    def __iter__(self):
        info = get_worker_info()
        worker, step = (-1, 1) if info is None else (info.id, info.num_workers)
        if info is not None:
            assert info.dataset is self  # the worker's own copy, the one iterating
        for value in range(self.start + max(worker, 0), self.end, step):
            yield torch.tensor([value, worker])


def _batches(loader_class, dataset, **options):
    return [b.tolist() if isinstance(b, torch.Tensor) else b for b in loader_class(dataset, **options)]


def _both(dataset, **options):
    theirs = _batches(torch.utils.data.DataLoader, dataset, **options)
    mine = _batches(mkdata.DataLoader, dataset, **options)
    assert mine == theirs, options
    return mine


@pytest.mark.parametrize(("batch_size", "drop_last"),
                         [(None, False), (1, False), (1, True), (3, False), (3, True), (4, False), (4, True)])
def test_one_process_batches_a_stream_like_torch(batch_size, drop_last):
    batches = _both(ShardedRange(0, 10), batch_size=batch_size, drop_last=drop_last)
    assert batches, "the stream gave nothing"
    assert len(mkdata.DataLoader(ShardedRange(0, 10), batch_size=batch_size, drop_last=drop_last)) == \
        len(torch.utils.data.DataLoader(ShardedRange(0, 10), batch_size=batch_size, drop_last=drop_last))


@pytest.mark.exercise("10.3")
@pytest.mark.parametrize(("num_workers", "batch_size", "drop_last", "end"),
                         [(2, 3, False, 10), (3, 2, True, 11), (2, None, False, 5), (4, 4, False, 9)])
def test_workers_shard_a_stream_and_take_turns_like_torch(num_workers, batch_size, drop_last, end):
    batches = _both(ShardedRange(0, end), batch_size=batch_size, drop_last=drop_last, num_workers=num_workers,
                    timeout=WAIT_S)
    workers = {row[1] for batch in batches for row in (batch if batch_size else [batch])}
    assert workers <= set(range(num_workers)) and len(workers) > 1


@pytest.mark.exercise("10.3")
def test_unsplit_streams_come_out_once_per_worker_like_torch():
    batches = _both(RangeStream(0, 5), batch_size=2, num_workers=2, timeout=WAIT_S)
    assert sorted(v for b in batches for v in b) == sorted(list(range(5)) * 2)


@pytest.mark.exercise("10.3")
def test_worker_init_fn_splits_the_workers_copies_like_torch():
    batches = _both(RangeStream(3, 10), batch_size=2, num_workers=2, worker_init_fn=split_range_per_worker,
                    timeout=WAIT_S)
    assert sorted(v for b in batches for v in b) == list(range(3, 10))


@pytest.mark.exercise("10.3")
def test_persistent_workers_restart_the_stream_each_epoch_like_torch():
    epochs = []
    for loader_class in (torch.utils.data.DataLoader, mkdata.DataLoader):
        loader = loader_class(ShardedRange(0, 7), batch_size=2, num_workers=2, persistent_workers=True,
                              timeout=WAIT_S)
        epochs.append([[b.tolist() for b in loader] for _ in range(2)])
    assert epochs[1] == epochs[0]
    assert epochs[1][0] == epochs[1][1] and epochs[1][0]


@pytest.mark.parametrize("options", [dict(shuffle=True), dict(shuffle=1), dict(sampler=[0, 1]),
                                     dict(batch_sampler=BatchSampler(SequentialSampler(range(3)), 2, False)),
                                     dict(batch_size=None, drop_last=True), dict(batch_size=0)],
                         ids=["shuffle", "shuffle=1", "sampler", "batch_sampler", "drop_last", "batch_size=0"])
def test_options_a_stream_cannot_take_are_refused_like_torch(options):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(ShardedRange(0, 3), **options)
    with pytest.raises(ValueError) as mine:
        mkdata.DataLoader(ShardedRange(0, 3), **options)
    assert str(mine.value) == str(theirs.value)


def test_shuffle_false_and_the_samplers_torch_reports():
    for shuffle in (False, None):
        _both(ShardedRange(0, 3), shuffle=shuffle, batch_size=2)
    mine, theirs = mkdata.DataLoader(ShardedRange(0, 3)), torch.utils.data.DataLoader(ShardedRange(0, 3))
    assert type(mine.sampler) is type(theirs.sampler)
    assert type(mine.batch_sampler) is type(theirs.batch_sampler)
    assert mkdata.DataLoader(ShardedRange(0, 3), batch_size=None).batch_sampler is None


def test_len_of_a_stream_without_len_is_a_type_error_like_torch():
    for loader_class in (torch.utils.data.DataLoader, mkdata.DataLoader):
        with pytest.raises(TypeError):
            len(loader_class(RangeStream(0, 3), batch_size=2))
    assert len(mkdata.DataLoader(ShardedRange(0, 7), batch_size=2)) == math.ceil(7 / 2)


def test_get_worker_info_is_none_in_the_main_process_like_torch():
    assert mkdata.get_worker_info() is None and get_worker_info() is None
    assert _both(ShardedRange(0, 2), batch_size=None) == [[0, -1], [1, -1]]


class UnderReported(ShardedRange):
    """A stream whose ``__len__`` says fewer samples than it yields."""

    def __len__(self) -> int:
        return 3


def _length_warnings(loader_class, asks_len, dataset, **options):
    """The messages of the warnings one epoch gives, with their category and the file they point to."""
    loader = loader_class(dataset, timeout=WAIT_S if options.get("num_workers") else 0, **options)
    if asks_len:
        len(loader)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = [b for b in loader]  # noqa: C416 - the warning must point at this line's file
    assert batches, "the stream gave nothing"
    return [(w.category, str(w.message), w.filename) for w in caught if "Length of IterableDataset" in str(w.message)]


@pytest.mark.parametrize(("batch_size", "asks_len"), [(None, True), (2, True), (4, True), (None, False)])
def test_a_stream_longer_than_its_len_warns_like_torch(batch_size, asks_len):
    dataset = UnderReported(0, 10)
    theirs = _length_warnings(torch.utils.data.DataLoader, asks_len, dataset, batch_size=batch_size)
    mine = _length_warnings(mkdata.DataLoader, asks_len, dataset, batch_size=batch_size)
    assert mine == theirs
    batches = 10 if batch_size is None else math.ceil(10 / batch_size)
    assert len(mine) == (max(0, batches - 3) if asks_len else 0)  # one per batch past len(dataset), as torch
    for category, message, filename in mine:
        assert category is UserWarning and filename == __file__
        assert "was reported to be 3(when accessing len(dataloader))" in message and "samples have been fetched" in message


@pytest.mark.exercise("10.3")
def test_a_stream_longer_than_its_len_warns_with_workers_like_torch():
    dataset = UnderReported(0, 10)
    theirs = _length_warnings(torch.utils.data.DataLoader, True, dataset, batch_size=None, num_workers=2)
    mine = _length_warnings(mkdata.DataLoader, True, dataset, batch_size=None, num_workers=2)
    assert mine == theirs and len(mine) == 10 - 3  # the workers yield 5 + 5 samples, one a batch
    assert all("For multiprocessing data-loading" in message for _, message, _ in mine)
