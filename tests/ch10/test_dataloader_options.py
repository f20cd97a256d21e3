"""DataLoader's other options against torch's: ``sampler=``, ``batch_sampler=``, ``batch_size=None``,
``worker_init_fn=`` with ``get_worker_info()``, and torch's refusals of combinations that
cannot work (also of ``multiprocessing_context`` and of attributes set after construction)."""
from __future__ import annotations

import pytest
import torch
from torch.utils.data import BatchSampler, Dataset, SequentialSampler, SubsetRandomSampler

from minikernel.utils.data import DataLoader, get_worker_info


class Squares(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        return torch.tensor([i * i]), i


class WhoLoads(Squares):
    """Each sample says which worker loaded it and what that worker's init left behind."""

    def __getitem__(self, i: int):
        info = torch.utils.data.get_worker_info()
        return i, (-1, -1, "") if info is None else (info.id, info.num_workers, getattr(info.dataset, "tag", ""))


def _tag(worker_id: int) -> None:
    torch.utils.data.get_worker_info().dataset.tag = f"init {worker_id}"  # (minikernel's loader sets torch's too)


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


SINGLE = {  # made afresh for each loader (a sampler with a generator has state)
    "sampler": lambda: dict(sampler=SubsetRandomSampler([5, 1, 3], generator=torch.Generator().manual_seed(0)),
                            batch_size=2),
    "batch_sampler": lambda: dict(batch_sampler=BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)),
    "batch_size None": lambda: dict(batch_size=None),
    "batch_size None, collate_fn": lambda: dict(batch_size=None, collate_fn=lambda sample: sample[1]),
    "shuffle False": lambda: dict(batch_size=3, shuffle=False, drop_last=True),
}


@pytest.mark.parametrize("name", list(SINGLE))
def test_single_process_batches_like_torch(name):
    theirs = list(torch.utils.data.DataLoader(Squares(7), **SINGLE[name]()))
    ours = list(DataLoader(Squares(7), **SINGLE[name]()))
    assert _same(ours, theirs), f"{name}: {ours} vs torch's {theirs}"


@pytest.mark.exercise("10.3")
def test_worker_init_fn_and_get_worker_info_like_torch():
    options = dict(batch_size=None, num_workers=2, worker_init_fn=_tag)
    theirs = sorted(torch.utils.data.DataLoader(WhoLoads(6), **options))
    ours = sorted(DataLoader(WhoLoads(6), **options))
    assert ours == theirs and {w for _, (w, _, _) in ours} == {0, 1}
    assert all(tag == f"init {w}" and n == 2 for _, (w, n, tag) in ours)
    assert get_worker_info() is None  # the main process
    assert sorted(DataLoader(OwnInfo(4), batch_size=None, num_workers=2)) == [[i, 2] for i in range(4)]


class OwnInfo(Squares):
    """minikernel's own ``get_worker_info()`` inside minikernel's workers."""

    def __getitem__(self, i: int):
        return i, get_worker_info().num_workers


BAD = {
    "sampler and shuffle": (dict(sampler=SequentialSampler(range(4)), shuffle=True), ValueError),
    "batch_sampler and batch_size": (dict(batch_sampler=BatchSampler(SequentialSampler(range(4)), 2, False),
                                          batch_size=2), ValueError),
    "batch_sampler and drop_last": (dict(batch_sampler=BatchSampler(SequentialSampler(range(4)), 2, False),
                                         drop_last=True), ValueError),
    "batch_size None and drop_last": (dict(batch_size=None, drop_last=True), ValueError),
    "batch_size 0": (dict(batch_size=0), ValueError),
    "context without workers": (dict(multiprocessing_context="spawn"), ValueError),
    "unknown start method": (dict(num_workers=1, multiprocessing_context="bogus"), ValueError),
    "context of another type": (dict(num_workers=1, multiprocessing_context=3), TypeError),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_options_raise_like_torch(name):
    options, error = BAD[name]
    with pytest.raises(error) as theirs:
        torch.utils.data.DataLoader(Squares(4), **options)
    with pytest.raises(error) as ours:
        DataLoader(Squares(4), **options)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("attribute", ["batch_size", "sampler", "batch_sampler", "drop_last", "dataset"])
def test_attributes_fixed_after_construction_like_torch(attribute):
    for loader in (torch.utils.data.DataLoader(Squares(4), batch_size=2), DataLoader(Squares(4), batch_size=2)):
        with pytest.raises(ValueError, match=f"{attribute} attribute should not be set"):
            setattr(loader, attribute, None)
