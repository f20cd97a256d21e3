"""Reference solution for exercise 2.1 (``minikernel/kernels/index.py``)."""
from __future__ import annotations

from typing import Sequence

from minikernel.kernels.index import IndexBuffer


def to_index_into(ordinal: int, shape: Sequence[int], out_index: IndexBuffer) -> None:
    for d in range(len(shape) - 1, -1, -1):
        out_index[d] = ordinal % shape[d]
        ordinal //= shape[d]
