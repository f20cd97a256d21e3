"""Off by one: the mean moves by delta / (count + 1) after count was already incremented."""
from __future__ import annotations

from minikernel.norm.online import Scalar, Triple

EXERCISE = "5.2"


def welford_update(count: Scalar, mean: Scalar, m2: Scalar, x: Scalar) -> Triple:
    count = count + 1
    delta = x - mean
    mean = mean + delta / (count + 1)
    return count, mean, m2 + delta * (x - mean)
