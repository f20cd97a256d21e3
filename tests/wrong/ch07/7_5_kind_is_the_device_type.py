"""A kind is (dtype, device type): tensors on cuda:0 and cuda:1 share a bucket."""
from __future__ import annotations

EXERCISE = "7.5"


def compute_bucket_assignment_by_size(tensors, bucket_size_limits, tensor_indices=None):
    closed = []
    open_ = {}
    for i, tensor in enumerate(tensors):
        index = i if tensor_indices is None else tensor_indices[i]
        bucket = open_.setdefault((tensor.dtype, tensor.device.type), [[], 0, 0])
        bucket[0].append(index)
        bucket[1] += tensor.numel() * tensor.element_size()
        limit = bucket_size_limits[bucket[2]]
        if bucket[1] >= limit:
            closed.append((bucket[0], limit))
            bucket[0], bucket[1] = [], 0
            bucket[2] = min(bucket[2] + 1, len(bucket_size_limits) - 1)
    closed += [(b[0], bucket_size_limits[b[2]]) for b in open_.values() if b[0]]
    if tensor_indices is None:
        closed.sort(key=lambda pair: min(pair[0]))
    return [indices for indices, _ in closed], [limit for _, limit in closed]
