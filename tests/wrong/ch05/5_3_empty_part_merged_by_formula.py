"""No special case for an empty part: the formulas run with count 0, and an empty part's NaN mean poisons the merge."""
from __future__ import annotations

EXERCISE = "5.3"


def welford_merge(count_a, mean_a, m2_a, count_b, mean_b, m2_b):
    count = count_a + count_b
    if count == 0:
        return count_a, mean_a, m2_a
    delta = mean_b - mean_a
    mean = mean_a + delta * (count_b / count)
    return count, mean, m2_a + m2_b + delta * delta * (count_a * count_b / count)
