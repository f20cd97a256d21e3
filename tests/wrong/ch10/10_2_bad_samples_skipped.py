"""A sample that raises is left out and the rest of the batch is collated: the error never reaches the main process."""
from __future__ import annotations

from minikernel.utils.data.worker import ExceptionWrapper

EXERCISE = "10.2"


def worker_loop(dataset, index_queue, data_queue, collate_fn, worker_id):
    while True:
        task = index_queue.get()
        if task is None:
            return
        idx, indices = task
        samples = []
        for i in indices:
            try:
                samples.append(dataset[i])
            except Exception:
                continue
        try:
            data = collate_fn(samples)
        except Exception:
            data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        data_queue.put((idx, data))
