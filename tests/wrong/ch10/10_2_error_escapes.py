"""A dataset error is not caught: it ends the worker instead of travelling home."""
from __future__ import annotations

EXERCISE = "10.2"


def worker_loop(dataset, index_queue, data_queue, collate_fn, worker_id):
    while True:
        task = index_queue.get()
        if task is None:
            return
        idx, indices = task
        data_queue.put((idx, collate_fn([dataset[i] for i in indices])))
