"""Off by one: each lambda is called with last_epoch + 1."""
from __future__ import annotations

from collections.abc import Sequence

from minikernel.optim.lr_scheduler import LrLambda

EXERCISE = "8.4"


def lambda_lrs(base_lrs: Sequence[float], lr_lambdas: Sequence[LrLambda], last_epoch: int) -> list[float]:
    return [base_lr * lr_lambda(last_epoch + 1) for lr_lambda, base_lr in zip(lr_lambdas, base_lrs)]
