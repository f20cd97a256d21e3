"""One batch is received before the stash is looked at: with the wanted batch already stashed and none left to come, it blocks."""
from __future__ import annotations

from minikernel.utils.data.worker import ExceptionWrapper

EXERCISE = "10.3"


def next_in_order(rcvd_idx, reorder, receive):
    while True:
        idx, data = receive()
        reorder[idx] = data
        if rcvd_idx in reorder:
            break
    data = reorder.pop(rcvd_idx)
    if isinstance(data, ExceptionWrapper):
        data.reraise()
    return data
