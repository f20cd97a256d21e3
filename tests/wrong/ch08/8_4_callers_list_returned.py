"""The caller's list (or tuple) of lambdas is returned itself, not a new list."""
from __future__ import annotations

from typing import Sequence, Union

from minikernel.optim.lr_scheduler import LrLambda

EXERCISE = "8.4"


def expand_lr_lambdas(lr_lambda: Union[LrLambda, Sequence[LrLambda]], num_groups: int) -> list[LrLambda]:
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * num_groups
    if len(lr_lambda) != num_groups:
        raise ValueError(f"Expected {num_groups} lr_lambdas, but got {len(lr_lambda)}")
    return lr_lambda

