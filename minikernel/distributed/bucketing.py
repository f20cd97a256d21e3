"""DDP's gradient buckets: which parameters' gradients travel in one allreduce (exercise 7.5).

An allreduce per parameter would pay the latency ``alpha`` once per tensor (chapter
07's cost model); one allreduce of everything could only start when the whole
backward pass is over. DDP cuts the parameters into **buckets** of a few MiB: a
bucket's allreduce starts as soon as its last gradient is ready, while backward goes
on computing the gradients of the next buckets.

``compute_bucket_assignment_by_size`` is how ``torch.nn.parallel.DistributedDataParallel``
assigns them (``torch.distributed._compute_bucket_assignment_by_size``, C++ in
``reducer.cpp``). DDP calls it twice:

* at wrap time, on the parameters in ``module.parameters()`` order with one unlimited
  bucket (``[sys.maxsize]``): the definition order need not be the order of use, so
  the first iteration reduces everything in one allreduce at the end of backward;
* before the second forward, on the parameters in the order their gradients became
  ready in the first backward (``tensor_indices`` = their parameter indices; for a
  feed-forward model roughly the reverse of the definition order), with the limits
  ``[first_bucket_bytes, bucket_bytes]``: 1 MiB then 25 MiB by default, or
  ``bucket_cap_mb`` for both when it is given.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import torch

from ..course.exercise import exercise


@exercise("7.5")
def compute_bucket_assignment_by_size(tensors: Sequence[torch.Tensor], bucket_size_limits: Sequence[int],
                                      tensor_indices: Optional[Sequence[int]] = None
                                      ) -> tuple[list[list[int]], list[int]]:
    """Group ``tensors`` into buckets of about ``bucket_size_limits`` bytes; return (indices, limits).

    Walk the tensors in the order given. ``tensors[i]`` is known by its index
    ``tensor_indices[i]`` (or ``i`` when ``tensor_indices`` is None). One bucket is
    open per ``(dtype, device)``, since a bucket is one flat tensor (the device with its
    index: ``cuda:0`` and ``cuda:1`` are two kinds). For each tensor:

    * append its index to the open bucket of its kind and add
      ``numel() * element_size()`` to that bucket's size;
    * the bucket's limit is the current entry of ``bucket_size_limits`` *for that
      kind* (each kind starts at entry 0);
    * if ``size >= limit``, the bucket is closed — the tensor that crossed the limit
      stays in it — and that kind moves on to the next limit (the last one repeats).

    Afterwards the buckets still open are closed too (in the order their kinds first
    appeared), each with its current limit. Without ``tensor_indices``, the buckets
    are then sorted by the smallest index they hold; with them, they stay in the
    order they were closed (the tensors came in gradient-ready order).

    Returns:
        ``(bucket_indices, per_bucket_size_limits)``: the indices in each bucket (in the
        order they were added) and each bucket's limit, bucket by bucket.

    Matches: ``torch.distributed._compute_bucket_assignment_by_size(tensors,
    bucket_size_limits, [False] * len(tensors), tensor_indices or [])`` — exactly,
    except that with ``tensor_indices`` and several kinds left open at the end, the
    order of those last buckets is the C++ hash map's (the tests compare them as a set).

    Example::

        >>> ts = [torch.zeros(3), torch.zeros(5), torch.zeros(4)]        # 12, 20, 16 bytes
        >>> compute_bucket_assignment_by_size(ts, [16, 24])
        ([[0, 1], [2]], [16, 24])
    """
    # TODO(7.5): ≈20 lines
    raise NotImplementedError("exercise 7.5 (compute_bucket_assignment_by_size) is not implemented yet")
