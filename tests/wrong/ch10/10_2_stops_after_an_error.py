"""After sending an error home the worker stops, leaving its other tasks unanswered."""
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
            data_queue.put((idx, collate_fn([dataset[i] for i in indices])))
        except Exception:
            data_queue.put((idx, ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")))
            return
