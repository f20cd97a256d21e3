"""A small ``DistributedDataParallel``: broadcast at wrap, buckets, hooks, ``no_sync``.

Built on exercise 7.5 (the bucket assignment), 7.6 (the reducer's hook) and, by
default, 7.3 (your ring allreduce carries the buckets). What it does, like
``torch.nn.parallel.DistributedDataParallel`` on CPU with its defaults:

* at wrap time, rank 0's parameters and buffers are broadcast to every rank, and
  the parameters go into one bucket, in ``parameters()`` order;
* every forward with grad mode on and outside ``no_sync()`` arms the reducer
  (``prepare_for_backward``) and broadcasts rank 0's buffers (``broadcast_buffers=True``);
* before the second synchronised forward, the buckets are rebuilt once in the order
  the gradients arrived, with ``[first_bucket_bytes, bucket_bytes]`` as limits;
* no ``find_unused_parameters``, no ``gradient_as_bucket_view``, no comm hooks, dense
  gradients only, one device.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, Optional

import torch
import torch.distributed as dist
from torch import nn

from .bucketing import compute_bucket_assignment_by_size
from .reducer import Reducer
from .ring import ring_allreduce

MiB = 1024 * 1024
DEFAULT_BUCKET_CAP_MB = 25  #: torch's default ``bucket_cap_mb``
DEFAULT_FIRST_BUCKET_BYTES = 1 * MiB  #: ``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES``


class DistributedDataParallel(nn.Module):
    """Average the gradients of ``module`` across the ranks, bucket by bucket, during backward.

    Args:
        module (nn.Module): the model; every rank wraps the same architecture.
        bucket_cap_mb (float, optional): bucket size in MiB. Default: ``None``
            (1 MiB for the first rebuilt bucket, 25 MiB for the others, like torch)
        allreduce (callable, optional): ``allreduce(tensor)`` sums in place across the
            ranks and returns None or a handle with ``wait()``. Default: ``None``
            (``ring_allreduce``, exercise 7.3)

    Example (in each rank)::

        >>> ddp = DistributedDataParallel(model, bucket_cap_mb=0.001)
        >>> loss_fn(ddp(x_mine), y_mine).backward()   # .grad now holds the mean over the ranks
        >>> with ddp.no_sync():
        ...     loss_fn(ddp(x2), y2).backward()       # local only: .grad accumulates
    """

    def __init__(self, module: nn.Module, bucket_cap_mb: Optional[float] = None,
                 allreduce: Optional[Callable[[torch.Tensor], Any]] = None):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("DistributedDataParallel needs a process group: call dist.init_process_group "
                               "first (in a rank started by run_ranks or torchrun)")
        self.module = module
        with torch.no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(t, src=0)  # every rank starts from rank 0's model
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module has no parameter "
                               "that requires a gradient")
        cap = int((DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * MiB)
        first = DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else cap
        self.rebuild_limits = [first, cap] if first < cap else [cap]
        initial, _ = compute_bucket_assignment_by_size(params, [sys.maxsize])
        self.reducer = Reducer(params, list(reversed(initial)), allreduce or ring_allreduce,
                               dist.get_world_size())
        self.require_backward_grad_sync = True

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if torch.is_grad_enabled():
            self.reducer.rebuild_buckets(self.rebuild_limits)
            if self.require_backward_grad_sync:
                self.reducer.prepare_for_backward()
        with torch.no_grad():
            for buf in self.module.buffers():
                dist.broadcast(buf, src=0)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Forward passes inside do not synchronise their backward: ``.grad`` accumulates locally.

        The first synchronised backward after it averages the accumulated gradients.
        The forward must be inside: the forward decides.
        """
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before
