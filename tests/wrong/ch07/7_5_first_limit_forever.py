"""Every bucket uses the first limit: the small first bucket's size is applied to all of them."""
from __future__ import annotations

EXERCISE = "7.5"


def compute_bucket_assignment_by_size(tensors, bucket_size_limits, tensor_indices=None):
    closed, open_ = [], {}
    limit = bucket_size_limits[0]
    for i, tensor in enumerate(tensors):
        index = i if tensor_indices is None else tensor_indices[i]
        bucket = open_.setdefault((tensor.dtype, tensor.device), [[], 0])
        bucket[0].append(index)
        bucket[1] += tensor.numel() * tensor.element_size()
        if bucket[1] >= limit:
            closed.append((bucket[0], limit))
            bucket[0], bucket[1] = [], 0
    closed += [(b[0], limit) for b in open_.values() if b[0]]
    if tensor_indices is None:
        closed.sort(key=lambda pair: min(pair[0]))
    return [i for i, _ in closed], [limit for _, limit in closed]
