"""Which samples each rank sees: ``torch.utils.data.DistributedSampler``'s indices, spelled out.

Every rank builds the *same* permutation (a generator seeded with ``seed + epoch``,
so all ranks agree without talking, and ``set_epoch`` reshuffles), pads it by
repeating its first indices until it divides evenly (or, with ``drop_last``, cuts
the tail), and takes every ``num_replicas``-th index starting at its rank. Every rank
gets the same number of samples, so every rank runs the same number of steps (a
rank with one step more would wait forever in its extra allreduce).
"""
from __future__ import annotations

import math

import torch


def shard_indices(n: int, num_replicas: int, rank: int, shuffle: bool = True, seed: int = 0, epoch: int = 0,
                  drop_last: bool = False) -> list[int]:
    """The indices ``DistributedSampler(dataset_of_len_n, num_replicas, rank, shuffle, seed, drop_last)``
    yields after ``set_epoch(epoch)``.

    Example::

        >>> shard_indices(10, 4, 1, shuffle=False)   # padded to 12: 0..9, 0, 1
        [1, 5, 9]
    """
    if not 0 <= rank < num_replicas:
        raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        indices = torch.randperm(n, generator=g).tolist()
    else:
        indices = list(range(n))
    if drop_last and n % num_replicas:
        per_rank = math.ceil((n - num_replicas) / num_replicas)
    else:
        per_rank = math.ceil(n / num_replicas)
    total = per_rank * num_replicas
    if drop_last:
        indices = indices[:total]
    else:
        padding = total - len(indices)
        indices += (indices * math.ceil(padding / len(indices)))[:padding] if padding else []
    return indices[rank:total:num_replicas]

