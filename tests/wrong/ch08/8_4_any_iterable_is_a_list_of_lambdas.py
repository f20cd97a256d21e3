"""Any iterable counts as one lambda per group (``isinstance(lr_lambda, Iterable)``): torch takes only a list or a tuple, and anything else as a single lambda."""
from __future__ import annotations

from collections.abc import Iterable

EXERCISE = "8.4"


def expand_lr_lambdas(lr_lambda, num_groups):
    if not isinstance(lr_lambda, Iterable):
        return [lr_lambda] * num_groups
    lambdas = list(lr_lambda)
    if len(lambdas) != num_groups:
        raise ValueError(f"Expected {num_groups} lr_lambdas, but got {len(lambdas)}")
    return lambdas
