"""KeyboardInterrupt is caught with the errors and sent home, as if it were the dataset's error; only SystemExit ends the worker."""
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
        except (Exception, KeyboardInterrupt):
            data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        data_queue.put((idx, data))
