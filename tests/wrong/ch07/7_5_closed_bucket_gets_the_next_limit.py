"""The kind moves on to the next limit before the closed bucket's limit is recorded: each bucket reports its successor's limit."""
from __future__ import annotations

EXERCISE = "7.5"


def compute_bucket_assignment_by_size(tensors, bucket_size_limits, tensor_indices=None):
    closed = []
    open_ = {}
    for i, tensor in enumerate(tensors):
        index = i if tensor_indices is None else tensor_indices[i]
        bucket = open_.setdefault((tensor.dtype, tensor.device), [[], 0, 0])
        bucket[0].append(index)
        bucket[1] += tensor.numel() * tensor.element_size()
        if bucket[1] >= bucket_size_limits[bucket[2]]:
            bucket[2] = min(bucket[2] + 1, len(bucket_size_limits) - 1)
            closed.append((bucket[0], bucket_size_limits[bucket[2]]))
            bucket[0], bucket[1] = [], 0
    closed += [(b[0], bucket_size_limits[b[2]]) for b in open_.values() if b[0]]
    if tensor_indices is None:
        closed.sort(key=lambda pair: min(pair[0]))
    return [indices for indices, _ in closed], [limit for _, limit in closed]
