"""Exercises 10.2 and 10.3 (minikernel/utils/data/): a worker's loop, batches back in order.

Oracle: ``torch.utils.data.DataLoader`` on the same dataset — the same batches in the
same order for any number of workers, the same error text from a failing worker —
and ``default_collate`` for what a worker sends.
"""
from __future__ import annotations

import queue
import random
import threading
import time
import traceback

import pytest
import torch
from hypothesis import given, strategies as st
from torch.utils.data import BatchSampler, SequentialSampler, default_collate

from minikernel.utils.data import (
    DataLoader,
    ExceptionWrapper,
    next_in_order,
    worker_loop,
)
from minikernel.utils.data.examples import BrokenAt, SlowSquares

# Loaders with workers wait at most this long for a batch (DataLoader's ``timeout``): a
# batch that never comes (received, then dropped) fails with the loader's own
# "timed out" message instead of hanging until the grader's limit.
WAIT_S = 5


def _run_worker(dataset, tasks, collate_fn=default_collate, worker_id=0):
    """Feed ``tasks`` then None to worker_loop in a thread; return what it put on the data queue."""
    index_queue, data_queue = queue.Queue(), queue.Queue()
    for task in tasks:
        index_queue.put(task)
    index_queue.put(None)
    failure = []

    def target():
        try:
            worker_loop(dataset, index_queue, data_queue, collate_fn, worker_id)
        except BaseException as err:
            failure.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=20)
    if failure:
        raise failure[0]
    assert not thread.is_alive(), "worker_loop did not return after None"
    assert index_queue.empty(), "worker_loop left tasks in its index queue"
    return [data_queue.get() for _ in range(data_queue.qsize())]


@pytest.mark.exercise("10.2")
def test_worker_answers_each_task_with_torchs_batch():
    dataset = SlowSquares(11)
    batches = list(BatchSampler(SequentialSampler(range(11)), 3, drop_last=False))
    tasks = list(enumerate(batches))[::-1]  # whatever order the main process sent
    got = _run_worker(dataset, tasks)
    expected = list(torch.utils.data.DataLoader(dataset, batch_size=3))
    assert [i for i, _ in got] == [i for i, _ in tasks], "answer each task once, in the order taken"
    for idx, batch in got:
        assert torch.equal(batch, expected[idx]), f"task {idx}: not the collated samples of its indices"


@pytest.mark.exercise("10.2")
def test_worker_uses_the_loaders_collate_fn():
    got = _run_worker(SlowSquares(6), [(0, [4, 1]), (1, [5])], collate_fn=lambda samples: ("mine", samples))
    assert got[0][0] == 0 and got[0][1][0] == "mine" and [s.tolist() for s in got[0][1][1]] == [[4.0, 16.0], [1.0, 1.0]]
    assert got[1][1][0] == "mine" and len(got[1][1][1]) == 1


@pytest.mark.exercise("10.2")
def test_worker_sends_an_error_home_and_goes_on():
    got = _run_worker(BrokenAt(8, bad=3), [(0, [0, 1]), (1, [2, 3]), (2, [4, 5])], worker_id=5)
    assert [i for i, _ in got] == [0, 1, 2], "after an error the worker takes the next task"
    wrapper = got[1][1]
    assert isinstance(wrapper, ExceptionWrapper), "a failed task is answered with an ExceptionWrapper"
    assert wrapper.exc_type is ValueError and "sample 3 is corrupt" in wrapper.exc_msg
    assert "Traceback (most recent call last)" in wrapper.exc_msg and "__getitem__" in wrapper.exc_msg
    with pytest.raises(ValueError) as info:
        wrapper.reraise()
    assert str(info.value).startswith("Caught ValueError in DataLoader worker process 5.\nOriginal Traceback")
    assert torch.equal(got[2][1], default_collate([SlowSquares(8)[4], SlowSquares(8)[5]]))


@pytest.mark.exercise("10.2")
def test_worker_sends_a_collate_error_home():
    def collate(samples):
        raise KeyError("no such field")

    (idx, wrapper), = _run_worker(SlowSquares(3), [(0, [0, 1])], collate_fn=collate)
    assert idx == 0 and isinstance(wrapper, ExceptionWrapper) and wrapper.exc_type is KeyError


def _receiver(arrivals):
    """A receive() handing out ``arrivals`` in order, failing if asked for more."""
    pending = list(arrivals)

    def receive():
        assert pending, "receive() called although the batch wanted was already there"
        return pending.pop(0)
    return receive, pending


@pytest.mark.exercise("10.3")
@given(st.integers(1, 12), st.randoms(use_true_random=False))
def test_batches_come_out_in_order_whatever_order_they_arrive(n, rng):
    order = list(range(n))
    rng.shuffle(order)
    receive, pending = _receiver([(i, f"batch {i}") for i in order])
    reorder = {}
    for want in range(n):
        assert next_in_order(want, reorder, receive) == f"batch {want}"
        arrived = set(order[:n - len(pending)])
        assert set(reorder) == arrived - set(range(want + 1)), (
            "keep early arrivals in reorder, take out the one returned, read no further than needed")
    assert not pending and not reorder


@pytest.mark.exercise("10.3")
def test_a_stashed_batch_is_taken_without_receiving():
    receive, _ = _receiver([])
    reorder = {4: "four", 6: "six"}
    assert next_in_order(4, reorder, receive) == "four"
    assert reorder == {6: "six"}


@pytest.mark.exercise("10.3")
def test_a_workers_error_is_raised_in_order_with_its_traceback():
    try:
        raise IndexError("bad index 9")
    except IndexError:
        wrapper = ExceptionWrapper(where="in DataLoader worker process 1")
    receive, _ = _receiver([(2, "two"), (1, wrapper), (0, "zero")])
    reorder = {}
    assert next_in_order(0, reorder, receive) == "zero"
    with pytest.raises(IndexError) as info:
        next_in_order(1, reorder, receive)
    assert "Caught IndexError in DataLoader worker process 1" in str(info.value) and "bad index 9" in str(info.value)
    assert reorder == {2: "two"}, "the failed batch is used up; the others wait"
    assert next_in_order(2, reorder, receive) == "two"


def _same_batches(a, b) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.exercise("10.3")
@pytest.mark.parametrize("num_workers, prefetch_factor", [(1, 2), (2, 1), (3, 2), (2, 4)])
def test_loader_gives_torchs_batches(num_workers, prefetch_factor):
    dataset = SlowSquares(23, delay_s=0.0)
    for shuffle in (False, True):
        for drop_last in (False, True):
            ours = list(DataLoader(dataset, batch_size=4, shuffle=shuffle, drop_last=drop_last, num_workers=num_workers,
                                   prefetch_factor=prefetch_factor, timeout=WAIT_S,
                                   generator=torch.Generator().manual_seed(1)))
            theirs = list(torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=shuffle, drop_last=drop_last,
                                                      generator=torch.Generator().manual_seed(1)))
            assert _same_batches(ours, theirs), f"shuffle={shuffle}, drop_last={drop_last}: batches differ from torch's"


@pytest.mark.exercise("10.3")
def test_loader_with_uneven_worker_speed_keeps_the_order():
    class Uneven(SlowSquares):
        def __getitem__(self, i):
            if i % 8 < 4:  # worker 0's batches are slow: worker 1's arrive first
                time.sleep(0.02)
            return super().__getitem__(i)

    ours = list(DataLoader(Uneven(32), batch_size=4, num_workers=2, timeout=WAIT_S))
    assert _same_batches(ours, list(torch.utils.data.DataLoader(SlowSquares(32), batch_size=4)))


@pytest.mark.exercise("10.3")
def test_loader_reraises_a_workers_error_like_torch():
    messages = []
    for loader_class in (DataLoader, torch.utils.data.DataLoader):
        loader = loader_class(BrokenAt(12, bad=5), batch_size=2, num_workers=2, timeout=WAIT_S)
        got = []
        with pytest.raises(ValueError) as info:
            for batch in loader:
                got.append(batch)
        messages.append(str(info.value))
        # The traceback's frames hold the iterator, in a cycle (the re-raised exception is a
        # local of one): cleared, the iterator stops its workers now; left to a later garbage
        # collection, which closes its queues first, torch's waits 5 s for each worker.
        traceback.clear_frames(info.tb)
        assert len(got) == 2, "batches 0 and 1 come first; batch 2 holds sample 5"
    first_lines = [m.splitlines()[:2] for m in messages]
    assert first_lines[0] == first_lines[1], f"{first_lines[0]} vs torch's {first_lines[1]}"
    assert "sample 5 is corrupt" in messages[0]


@pytest.mark.exercise("10.3")
def test_persistent_workers_survive_the_epoch():
    loader = DataLoader(SlowSquares(10), batch_size=3, num_workers=2, persistent_workers=True,
                        timeout=WAIT_S)
    epochs = [list(loader) for _ in range(3)]
    expected = list(torch.utils.data.DataLoader(SlowSquares(10), batch_size=3))
    assert all(_same_batches(e, expected) for e in epochs)
    workers = loader._iterator.workers
    assert all(w.is_alive() for w in workers), "persistent workers stay alive between epochs"
    loader._iterator.shutdown()
    assert not any(w.is_alive() for w in workers)


@pytest.mark.exercise("10.3")
def test_workers_stop_at_the_end_of_an_epoch():
    iterator = iter(DataLoader(SlowSquares(6), batch_size=2, num_workers=2, timeout=WAIT_S))
    assert len(list(iterator)) == 3
    assert not any(w.is_alive() for w in iterator.workers), "workers are joined when the epoch ends"


# Not exercises: the loader's arguments and its single-process path.

@pytest.mark.parametrize("kwargs, message", [
    ({"num_workers": -1}, "num_workers option should be non-negative"),
    ({"timeout": -1}, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in multiprocessing"),
    ({"num_workers": 1, "prefetch_factor": -1}, "prefetch_factor option should be non-negative"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
])
def test_bad_arguments_are_torchs_errors(kwargs, message):
    for loader_class in (DataLoader, torch.utils.data.DataLoader):
        with pytest.raises(ValueError, match=message):
            loader_class(SlowSquares(4), **kwargs)


def test_single_process_loader_matches_torch_and_its_length():
    for seed in range(3):
        ours = DataLoader(SlowSquares(10), batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(seed))
        theirs = torch.utils.data.DataLoader(SlowSquares(10), batch_size=3, shuffle=True,
                                             generator=torch.Generator().manual_seed(seed))
        assert len(ours) == len(theirs) and _same_batches(list(ours), list(theirs))
    random.seed(0)
    torch.manual_seed(5)
    a = list(DataLoader(SlowSquares(10), batch_size=4, shuffle=True))
    torch.manual_seed(5)
    b = list(torch.utils.data.DataLoader(SlowSquares(10), batch_size=4, shuffle=True))
    assert _same_batches(a, b), "with the global seed, the same shuffle as torch"


def test_pin_memory_without_an_accelerator_warns_like_torch():
    if torch.accelerator.is_available():
        pytest.skip("this checks the warning given where no accelerator exists")
    for loader_class in (DataLoader, torch.utils.data.DataLoader):
        with pytest.warns(UserWarning, match="no accelerator is found, then device pinned memory won't be used"):
            list(loader_class(SlowSquares(2), pin_memory=True))


class _Interrupted(torch.utils.data.Dataset):
    """Sample 1 raises ``kind`` (a BaseException that is not an Exception)."""

    def __init__(self, kind):
        self.kind = kind

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            raise self.kind("stop")
        return torch.tensor([float(i)])


@pytest.mark.exercise("10.2")
@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit])
def test_worker_lets_a_base_exception_through(kind):
    """Only ``Exception`` travels home: KeyboardInterrupt or SystemExit leaves the loop, as in torch's worker."""
    index_queue, data_queue = queue.Queue(), queue.Queue()
    for task in [(0, [0]), (1, [1]), (2, [2])]:
        index_queue.put(task)
    index_queue.put(None)
    with pytest.raises(kind):
        worker_loop(_Interrupted(kind), index_queue, data_queue, default_collate, 0)
    sent = [data_queue.get() for _ in range(data_queue.qsize())]
    assert [i for i, _ in sent] == [0], f"only task 0 is answered before the {kind.__name__}: {sent}"
