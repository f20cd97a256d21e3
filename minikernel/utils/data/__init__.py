"""A small multi-process DataLoader, built like ``torch.utils.data.DataLoader``.

* ``worker``      ``worker_loop`` (exercise 10.2): a worker process's loop, and
                  ``ExceptionWrapper``, which carries a worker's error home
* ``dataloader``  ``DataLoader`` and its iterators; ``next_in_order`` (exercise 10.3):
                  hand out batches in sampler order although workers finish out of order
* ``examples``    datasets for chapter 10 (slow samples, a broken sample)

* ``iterable``    what a stream (``IterableDataset``) needs: batches cut by each loading process

Batches are built with torch's samplers and ``default_collate``.
"""
from .dataloader import DataLoader, next_in_order
from .worker import ExceptionWrapper, get_worker_info, worker_loop

__all__ = ["DataLoader", "ExceptionWrapper", "get_worker_info", "next_in_order", "worker_loop"]
