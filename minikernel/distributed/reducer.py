"""DDP's reducer: gradients averaged bucket by bucket while backward goes on (exercise 7.6).

``torch.nn.parallel.DistributedDataParallel`` hands its parameters to a C++
``Reducer``. The reducer hangs a hook on every parameter that fires once that
parameter's ``.grad`` has been accumulated (here: ``register_post_accumulate_grad_hook``;
torch's hook sits on the parameter's ``AccumulateGrad`` node). Then, in each backward:

1. a hook copies its gradient, divided by the world size, into its slot of its
   bucket's flat buffer, and counts the bucket down;
2. when a bucket holds all its gradients, its allreduce (a SUM of the already
   divided gradients: the mean) is launched — if every bucket before it has been
   launched: all ranks must issue their collectives in the same order, so buckets
   go strictly in order 0, 1, 2, ...;
3. after the last bucket has been launched, the reducer waits for every allreduce
   and copies each averaged slot back into its parameter's ``.grad``.

Launching a bucket while autograd is still computing the gradients of the next
ones is the overlap of communication with backward. Whether a backward pass is
synchronised at all is decided by the *forward*: ``prepare_for_backward`` (called by
DDP's forward, unless inside ``no_sync()``) arms the hooks; without it the hooks do
nothing and ``.grad`` accumulates locally, to be averaged by the next synchronised
backward (gradient accumulation).

``Reducer`` is the complete bookkeeping; ``mark_ready`` and ``finalize_backward`` are
the exercise.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..course.exercise import exercise
from .bucketing import compute_bucket_assignment_by_size


@dataclass
class Bucket:
    """One flat buffer holding the gradients of ``params`` (parameter indices), back to back."""

    index: int                 #: position in ``Reducer.buckets``: the order of the allreduces
    params: list[int]          #: parameter indices, in the order of their slots
    offsets: list[int]         #: where each parameter's slot starts in ``buffer``
    buffer: torch.Tensor       #: flat, one dtype
    pending: int = 0           #: gradients still missing in this backward
    work: Any = None           #: what the allreduce returned: None (it finished), or a handle with ``wait()``

    def slot(self, position: int, numel: int) -> torch.Tensor:
        """The flat view of the ``position``-th parameter's gradient in ``buffer``."""
        return self.buffer[self.offsets[position]:self.offsets[position] + numel]


@exercise("7.6")
def mark_ready(reducer: "Reducer", index: int) -> None:
    """The hook of parameter ``index``: its ``.grad`` has just been accumulated.

    * If ``reducer.expect_autograd_hooks`` is False (the forward ran under
      ``no_sync()``, or outside DDP), do nothing: the gradient stays local in ``.grad``.
    * Copy ``reducer.params[index].grad``, flattened and divided by
      ``reducer.world_size``, into its slot: ``bucket, position = reducer.locate[index]``
      then ``bucket.slot(position, numel)``. Count the bucket down (``bucket.pending``).
    * Launch, in order, every bucket that is complete and whose turn it is.
      ``reducer.next_bucket`` is the *index* (into ``reducer.buckets``) of the next
      bucket to launch: while it is below ``len(reducer.buckets)`` and that bucket's
      ``pending`` is 0, ``reducer.launch(reducer.buckets[reducer.next_bucket])`` and add
      1 to ``reducer.next_bucket``. (A complete bucket whose predecessors are not
      launched yet waits.)
    * After the last bucket has been launched, call ``finalize_backward(reducer)``.

    Matches: the gradients and the order of the bucket allreduces of
    ``torch.nn.parallel.DistributedDataParallel`` (seen through a comm hook). ≈12 lines.
    """
    # TODO(7.6): ≈12 lines
    raise NotImplementedError("exercise 7.6 (mark_ready) is not implemented yet")


@exercise("7.6")
def finalize_backward(reducer: "Reducer") -> None:
    """After the last launch: wait for every bucket's allreduce, write the means back.

    For every bucket: if ``bucket.work`` is not None, ``bucket.work.wait()`` (an
    asynchronous allreduce may still be running); then copy each parameter's slot
    back into its ``.grad`` (``grad.copy_(slot.view_as(grad))``). Finally set
    ``reducer.expect_autograd_hooks = False``: this backward is finished (the next
    forward checks it). ≈7 lines.

    Matches: ``.grad`` after ``backward()`` under ``DistributedDataParallel``.
    """
    # TODO(7.6): ≈7 lines
    raise NotImplementedError("exercise 7.6 (finalize_backward) is not implemented yet")


class Reducer:
    """Buckets, hooks and the state of one backward pass.

    Args:
        params (sequence of Tensor): the parameters whose gradients are averaged.
        bucket_indices (list of list of int): parameter indices per bucket, in the
            order the buckets are reduced.
        allreduce (callable): ``allreduce(tensor)`` sums ``tensor`` across the ranks in
            place; it returns None when done, or a handle whose ``wait()`` finishes it
            (``functools.partial(dist.all_reduce, async_op=True)``).
        world_size (int): the number of ranks (the gradients are divided by it).
    """

    def __init__(self, params: Sequence[torch.Tensor], bucket_indices: list[list[int]],
                 allreduce: Callable[[torch.Tensor], Any], world_size: int):
        self.params = list(params)
        self.allreduce, self.world_size = allreduce, world_size
        self.expect_autograd_hooks = False
        self.iteration = -1
        self.next_bucket = 0
        self.ready_order: list[int] = []   #: gradient-ready order of the last backward before the rebuild
        self.has_rebuilt_buckets = False
        self.log: list[tuple[int, int, list[int]]] = []  #: (iteration, bucket, params) per allreduce
        self.events: list[str] = []        #: hooks and launches of the current backward, in order
        self.ready: set[int] = set()       #: parameters whose gradient arrived in the current backward
        self._build(bucket_indices)
        self._handles = [p.register_post_accumulate_grad_hook(functools.partial(self._autograd_hook, i))
                         for i, p in enumerate(self.params)]

    def _build(self, bucket_indices: list[list[int]]) -> None:
        seen = sorted(i for b in bucket_indices for i in b)
        if seen != list(range(len(self.params))):
            raise ValueError("bucket_indices must hold every parameter index exactly once; "
                             f"got {bucket_indices} for {len(self.params)} parameters")
        self.buckets, self.locate = [], {}
        for k, indices in enumerate(bucket_indices):
            sizes = [self.params[i].numel() for i in indices]
            offsets = [sum(sizes[:j]) for j in range(len(sizes))]
            dtypes = {self.params[i].dtype for i in indices}
            if len(dtypes) != 1:
                raise ValueError(f"bucket {k} mixes dtypes {sorted(map(str, dtypes))}: one bucket is one flat tensor")
            bucket = Bucket(k, list(indices), offsets, torch.zeros(sum(sizes), dtype=dtypes.pop()))
            self.buckets.append(bucket)
            for position, i in enumerate(indices):
                self.locate[i] = (bucket, position)

    def _autograd_hook(self, index: int, param: torch.Tensor) -> None:
        if self.expect_autograd_hooks:
            self.events.append(f"grad {index} ready")
            self.ready.add(index)
            if not self.has_rebuilt_buckets:
                self.ready_order.append(index)
        mark_ready(self, index)

    def prepare_for_backward(self) -> None:
        """Arm the hooks for the coming backward (DDP's forward calls this)."""
        if self.expect_autograd_hooks:
            missing = sorted(set(range(len(self.params))) - self.ready)
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. The "
                f"gradients of parameter(s) {missing} never arrived: a parameter that takes no part in the loss "
                "leaves its bucket waiting forever. Use every parameter in the forward pass (torch's DDP offers "
                "find_unused_parameters=True for models that cannot).")
        self.iteration += 1
        self.next_bucket, self.events, self.ready = 0, [], set()
        if not self.has_rebuilt_buckets:
            self.ready_order = []  # the rebuild uses the order of the last synchronised backward
        for bucket in self.buckets:
            bucket.pending, bucket.work = len(bucket.params), None
        self.expect_autograd_hooks = True

    def launch(self, bucket: Bucket) -> None:
        """Start ``bucket``'s allreduce (recorded in ``log`` and ``events``)."""
        self.log.append((self.iteration, bucket.index, list(bucket.params)))
        self.events.append(f"allreduce bucket {bucket.index} {bucket.params}")
        bucket.work = self.allreduce(bucket.buffer)

    def rebuild_buckets(self, bucket_size_limits: list[int]) -> bool:
        """Once, after the first synchronised backward: buckets in gradient-ready order.

        Returns whether it rebuilt (torch logs "Reducer buckets have been rebuilt in
        this iteration.").
        """
        if self.has_rebuilt_buckets or len(self.ready_order) != len(self.params) or self.expect_autograd_hooks:
            return False
        ordered = [self.params[i] for i in self.ready_order]
        indices, _ = compute_bucket_assignment_by_size(ordered, bucket_size_limits, self.ready_order)
        self._build(indices)
        self.has_rebuilt_buckets = True
        return True

    def remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
