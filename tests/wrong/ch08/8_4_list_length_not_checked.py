"""A list of lambdas of the wrong length is accepted."""
from __future__ import annotations

from collections.abc import Sequence

from minikernel.optim.lr_scheduler import LrLambda

EXERCISE = "8.4"


def expand_lr_lambdas(lr_lambda: LrLambda | Sequence[LrLambda], num_groups: int) -> list[LrLambda]:
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * num_groups
    return list(lr_lambda)
