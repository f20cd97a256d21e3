"""The error says it happened in a DataLoader worker process but not in which one."""
from __future__ import annotations

from minikernel.utils.data.worker import ExceptionWrapper

EXERCISE = "10.2"


def worker_loop(dataset, index_queue, data_queue, collate_fn, worker_id):
    while True:
        task = index_queue.get()
        if task is None:
            return
        idx, indices = task
        try:
            data = collate_fn([dataset[i] for i in indices])
        except Exception:
            data = ExceptionWrapper(where="in DataLoader worker process")
        data_queue.put((idx, data))
