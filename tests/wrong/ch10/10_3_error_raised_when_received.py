"""An error is raised the moment it arrives, even when it belongs to a later batch than the one asked for."""
from __future__ import annotations

from minikernel.utils.data.worker import ExceptionWrapper

EXERCISE = "10.3"


def next_in_order(rcvd_idx, reorder, receive):
    while rcvd_idx not in reorder:
        idx, data = receive()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        reorder[idx] = data
    data = reorder.pop(rcvd_idx)
    if isinstance(data, ExceptionWrapper):
        data.reraise()
    return data
