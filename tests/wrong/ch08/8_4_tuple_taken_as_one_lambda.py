"""Only a list counts as one lambda per group: a tuple of lambdas is repeated as if it were one function."""
from __future__ import annotations

EXERCISE = "8.4"


def expand_lr_lambdas(lr_lambda, num_groups):
    if not isinstance(lr_lambda, list):
        return [lr_lambda] * num_groups
    if len(lr_lambda) != num_groups:
        raise ValueError(f"Expected {num_groups} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)
