"""A failed batch is sent with number None (as a dying worker's error is): the main process raises it before the batches ahead of it."""
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
            data_queue.put((None, ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")))
