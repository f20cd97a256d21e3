"""A batch taken from the stash is returned as it is: a worker's error that arrived early comes back as a batch."""
from __future__ import annotations

from minikernel.utils.data.worker import ExceptionWrapper

EXERCISE = "10.3"


def next_in_order(rcvd_idx, reorder, receive):
    if rcvd_idx in reorder:
        return reorder.pop(rcvd_idx)
    while True:
        idx, data = receive()
        if idx == rcvd_idx:
            if isinstance(data, ExceptionWrapper):
                data.reraise()
            return data
        reorder[idx] = data
