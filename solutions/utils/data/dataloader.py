"""Reference solution for exercise 10.3 (``minikernel/utils/data/dataloader.py``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikernel.utils.data.worker import ExceptionWrapper


def next_in_order(rcvd_idx: int, reorder: dict[int, Any], receive: Callable[[], tuple[int, Any]]) -> Any:
    while rcvd_idx not in reorder:
        idx, data = receive()
        reorder[idx] = data
    data = reorder.pop(rcvd_idx)
    if isinstance(data, ExceptionWrapper):
        data.reraise()
    return data
