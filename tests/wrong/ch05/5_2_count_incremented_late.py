"""The mean is updated with the old count, before counting the new value."""
from __future__ import annotations

from minikernel.norm.online import Scalar, Triple

EXERCISE = "5.2"


def welford_update(count: Scalar, mean: Scalar, m2: Scalar, x: Scalar) -> Triple:
    delta = x - mean
    mean = mean + delta / (count if count else 1)
    count = count + 1
    return count, mean, m2 + delta * (x - mean)
