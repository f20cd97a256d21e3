"""Only too few lambdas are refused: extra ones are silently dropped."""
from __future__ import annotations

EXERCISE = "8.4"


def expand_lr_lambdas(lr_lambda, num_groups):
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * num_groups
    if len(lr_lambda) < num_groups:
        raise ValueError(f"Expected {num_groups} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)[:num_groups]
