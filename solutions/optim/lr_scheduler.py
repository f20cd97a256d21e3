"""Reference solution for exercise 8.4 (``minikernel/optim/lr_scheduler.py``)."""
from __future__ import annotations

from typing import Sequence, Union

from minikernel.optim.lr_scheduler import LrLambda


def expand_lr_lambdas(lr_lambda: Union[LrLambda, Sequence[LrLambda]], num_groups: int) -> list[LrLambda]:
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * num_groups
    if len(lr_lambda) != num_groups:
        raise ValueError(f"Expected {num_groups} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


def lambda_lrs(base_lrs: Sequence[float], lr_lambdas: Sequence[LrLambda], last_epoch: int) -> list[float]:
    return [base_lr * lr_lambda(last_epoch) for lr_lambda, base_lr in zip(lr_lambdas, base_lrs)]
