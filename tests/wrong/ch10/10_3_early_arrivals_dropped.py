"""Batches that arrive before their turn are thrown away while waiting."""
from __future__ import annotations

from minikernel.utils.data.worker import ExceptionWrapper

EXERCISE = "10.3"


def next_in_order(rcvd_idx, reorder, receive):
    if rcvd_idx in reorder:
        data = reorder.pop(rcvd_idx)
    else:
        idx, data = receive()
        while idx != rcvd_idx:
            idx, data = receive()
    if isinstance(data, ExceptionWrapper):
        data.reraise()
    return data
