"""Reference solution for exercise 10.2 (``minikernel/utils/data/worker.py``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikernel.utils.data.worker import ExceptionWrapper


def worker_loop(dataset: Any, index_queue: Any, data_queue: Any, collate_fn: Callable, worker_id: int) -> None:
    while True:
        task = index_queue.get()
        if task is None:
            return
        idx, indices = task
        try:
            data = collate_fn([dataset[i] for i in indices])
        except Exception:
            data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        data_queue.put((idx, data))
