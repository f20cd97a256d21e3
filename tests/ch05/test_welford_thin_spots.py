"""Exercise 5.3: two parts with the same mean merge to exactly that mean. In Chan's formula
``delta = mean_b - mean_a`` is 0, so ``mean = mean_a``; the weighted average
``(count_a·mean_a + count_b·mean_b) / count`` rounds three times and can miss it by a unit in the
last place.

Oracle: exact arithmetic (``fractions.Fraction``): the union's values all equal ``m``, so its
mean is ``m`` exactly and its variance 0 (a float sum of the values, as ``torch.mean`` does, is
itself rounded: ``mean([0.1] * 3)`` is ``0.10000000000000002``).
"""
from __future__ import annotations

from fractions import Fraction

import pytest

from minikernel.norm import online as W


@pytest.mark.exercise("5.3")
@pytest.mark.parametrize("m,count_a,count_b", [(0.1, 1, 2), (0.7, 1, 2), (123.456, 3, 7)])
def test_parts_with_the_same_mean_merge_to_exactly_that_mean(m, count_a, count_b):
    union = [Fraction(m)] * (count_a + count_b)
    exact_mean = sum(union) / len(union)
    assert exact_mean == Fraction(m) and sum((v - exact_mean) ** 2 for v in union) == 0
    count, mean, m2 = W.welford_merge(float(count_a), m, 0.0, float(count_b), m, 0.0)
    assert count == count_a + count_b
    assert Fraction(mean) == exact_mean, f"delta is 0, so the merged mean is mean_a itself: got {mean!r} for {m!r}"
    assert m2 == 0.0
