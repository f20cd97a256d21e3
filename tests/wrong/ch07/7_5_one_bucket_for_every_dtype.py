"""One open bucket for all tensors: float32 and float64 gradients end up in one flat buffer."""
from __future__ import annotations

EXERCISE = "7.5"


def compute_bucket_assignment_by_size(tensors, bucket_size_limits, tensor_indices=None):
    closed, indices, size, position = [], [], 0, 0
    for i, tensor in enumerate(tensors):
        indices.append(i if tensor_indices is None else tensor_indices[i])
        size += tensor.numel() * tensor.element_size()
        if size >= bucket_size_limits[position]:
            closed.append((indices, bucket_size_limits[position]))
            indices, size = [], 0
            position = min(position + 1, len(bucket_size_limits) - 1)
    if indices:
        closed.append((indices, bucket_size_limits[position]))
    return [i for i, _ in closed], [limit for _, limit in closed]
