"""The first dimension varies fastest (loop runs forwards)."""
from __future__ import annotations

from collections.abc import Sequence

from minikernel.kernels.index import IndexBuffer

EXERCISE = "2.1"


def to_index_into(ordinal: int, shape: Sequence[int], out_index: IndexBuffer) -> None:
    for d in range(len(shape)):
        out_index[d] = ordinal % shape[d]
        ordinal //= shape[d]
