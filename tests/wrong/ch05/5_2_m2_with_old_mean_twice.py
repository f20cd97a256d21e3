"""M2 grows by delta squared (old mean twice) instead of delta * (x - new mean)."""
from __future__ import annotations

from minikernel.norm.online import Scalar, Triple

EXERCISE = "5.2"


def welford_update(count: Scalar, mean: Scalar, m2: Scalar, x: Scalar) -> Triple:
    count = count + 1
    delta = x - mean
    mean = mean + delta / count
    return count, mean, m2 + delta * delta
