"""The merged mean is the weighted average (na·ma + nb·mb)/n instead of ma + delta·nb/n."""
from __future__ import annotations

from minikernel.norm.online import Scalar, Triple

EXERCISE = "5.3"


def welford_update(count: Scalar, mean: Scalar, m2: Scalar, x: Scalar) -> Triple:
    count = count + 1
    delta = x - mean
    mean = mean + delta / count
    return count, mean, m2 + delta * (x - mean)


def welford_merge(count_a: Scalar, mean_a: Scalar, m2_a: Scalar,
                  count_b: Scalar, mean_b: Scalar, m2_b: Scalar) -> Triple:
    if count_b == 0:
        return count_a, mean_a, m2_a
    if count_a == 0:
        return count_b, mean_b, m2_b
    count = count_a + count_b
    delta = mean_b - mean_a
    mean = (count_a * mean_a + count_b * mean_b) / count
    return count, mean, m2_a + m2_b + delta * delta * (count_a * count_b / count)
