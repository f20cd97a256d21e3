"""Exercise 5.3 at its edge: merging with an empty part returns the other part's triple unchanged,
whatever the empty part's mean and M2 hold (``np.mean([])`` is NaN)."""
from __future__ import annotations

import numpy as np
import pytest

from minikernel.norm import online as W

DATA = np.array([1.0, 2.0, 4.0, 8.5])


@pytest.mark.exercise("5.3")
@pytest.mark.parametrize("empty_mean, empty_m2", [(float("nan"), float("nan")), (0.0, 0.0), (7.0, 3.0)])
@pytest.mark.parametrize("empty_first", [False, True])
def test_merging_with_an_empty_part_returns_the_other(empty_mean, empty_m2, empty_first):
    full = (len(DATA), float(DATA.mean()), float(((DATA - DATA.mean()) ** 2).sum()))  # float64 oracle
    empty = (0, empty_mean, empty_m2)
    got = W.welford_merge(*(empty + full if empty_first else full + empty))
    assert tuple(got) == full, f"merged with an empty part: {got}, expected the other part's {full}"
