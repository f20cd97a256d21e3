"""Exercise 10.2 at its edges: what ``collate_fn`` is given, for batches of one, several and no
indices, and samples of several kinds.

Oracle: torch's map-style fetcher (``torch.utils.data._utils.fetch._MapDatasetFetcher``), which
builds ``[dataset[i] for i in indices]`` and passes that list to ``collate_fn``.
"""
from __future__ import annotations

import pytest
from torch.utils.data._utils.fetch import _MapDatasetFetcher

from minikernel.utils.data.examples import SlowSquares
from tests.ch10.test_dataloader import _run_worker


class _Mixed:
    """Samples of several kinds: tuples, dicts, strings, ints."""

    def __getitem__(self, i):
        return [(i, -i), {"i": i}, f"s{i}", i * 7][i % 4]

    def __len__(self):
        return 8


def _recording():
    seen = []

    def collate(samples):
        seen.append((type(samples), samples if not isinstance(samples, (list, tuple)) else list(samples)))
        return "collated"

    return seen, collate


@pytest.mark.exercise("10.2")
@pytest.mark.parametrize("dataset", [SlowSquares(6), _Mixed()], ids=["tensors", "mixed"])
@pytest.mark.parametrize("indices", [[3], [0, 1, 2, 3], [5, 0, 5], []], ids=str)
def test_collate_fn_gets_the_list_torch_gives_it(dataset, indices):
    """``collate_fn`` receives a ``list`` of the samples, in the order of the indices (not a tuple,
    not a generator), as torch's fetcher passes it."""
    expected, torch_collate = _recording()
    _MapDatasetFetcher(dataset, True, torch_collate, False).fetch(list(indices))
    got, collate = _recording()
    answers = _run_worker(dataset, [(0, list(indices))], collate_fn=collate)
    assert answers == [(0, "collated")]
    assert [t for t, _ in got] == [t for t, _ in expected] == [list], (
        f"collate_fn was given {[t.__name__ for t, _ in got]}; torch gives it a list")
    assert [len(s) for _, s in got] == [len(s) for _, s in expected]
