"""SyncBatchNorm's trick: batch statistics over every rank from one allreduce.

With the batch split across ranks, plain BatchNorm normalises each rank's slice
with that slice's own mean and variance. SyncBatchNorm wants the statistics of
the *whole* batch. Three numbers per channel are enough, and they add up across
ranks: the sum ``Σx``, the sum of squares ``Σx²`` and the count ``n``. One
allreduce (SUM) of ``[Σx, Σx², n]`` gives every rank::

    mean = Σx / n        var = Σx² / n - mean²   (biased: what normalisation uses)

and the running variance is updated with the unbiased ``var * n / (n - 1)``, as
BatchNorm does. (``Σx² / n - mean²`` loses precision when ``|mean| >> std``;
PyTorch's own SyncBatchNorm gathers per-rank mean and inverse std instead.)

``torch.nn.SyncBatchNorm`` itself only runs on GPUs (on CPU it raises
"SyncBatchNorm expected input tensor to be on GPU ..."), so on CPU this is the
way to see it work.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.distributed as dist
import torch.nn.functional as F

AllReduce = Callable[..., object]  #: ``fn(tensor, op=ReduceOp.SUM, group=None)``, in place


def global_batch_stats(x: torch.Tensor, group: Optional[dist.ProcessGroup] = None,
                       allreduce: AllReduce = dist.all_reduce) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Mean, biased variance and element count per channel over every rank's batch.

    Args:
        x (Tensor): this rank's batch, shape ``(N, C)`` or ``(N, C, *)``; channels are dim 1.
        group (ProcessGroup, optional): the ranks sharing the batch. Default: ``None`` (all)
        allreduce (callable, optional): the allreduce to use, e.g. ``ring_allreduce``.
            Default: ``dist.all_reduce``

    Returns:
        (mean, var, count): ``mean`` and ``var`` of shape ``(C,)``, ``count`` an int.

    Matches: ``torch.var_mean(full_batch, dim=[0, 2, ...], correction=0)`` on the
    concatenated batch.
    """
    if x.dim() < 2:
        raise ValueError(f"expected a batch of shape (N, C) or (N, C, ...), got shape {tuple(x.shape)}")
    dims = [0] + list(range(2, x.dim()))
    count = x.numel() // x.shape[1]
    # float64 for the sums: Σx² - n·mean² cancels, and the count must stay exact
    packed = torch.cat([x.double().sum(dims), (x.double() ** 2).sum(dims),
                        torch.tensor([count], dtype=torch.float64)])
    allreduce(packed, op=dist.ReduceOp.SUM, group=group)  # the one collective
    channels = x.shape[1]
    total, squares, n = packed[:channels], packed[channels:2 * channels], packed[-1]
    mean = total / n
    var = squares / n - mean ** 2
    return mean.to(x.dtype), var.clamp_min(0).to(x.dtype), int(n.item())


def sync_batch_norm(x: torch.Tensor, running_mean: torch.Tensor, running_var: torch.Tensor,
                    weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
                    momentum: float = 0.1, eps: float = 1e-5, group: Optional[dist.ProcessGroup] = None,
                    allreduce: AllReduce = dist.all_reduce) -> torch.Tensor:
    """BatchNorm in training mode with statistics over every rank's batch.

    Normalises ``x`` with the global mean and biased variance, applies ``weight`` and
    ``bias``, and updates ``running_mean``/``running_var`` in place (``running = (1 -
    momentum) · running + momentum · batch``, with the unbiased variance).

    Matches: ``F.batch_norm(full_batch, running_mean, running_var, weight, bias,
    training=True, momentum=momentum, eps=eps)`` on the concatenated batch — each
    rank gets its own rows of that output, and the same running statistics.
    """
    mean, var, count = global_batch_stats(x, group, allreduce)
    shape = (1, -1) + (1,) * (x.dim() - 2)
    y = (x - mean.view(shape)) * torch.rsqrt(var.view(shape) + eps)
    if weight is not None:
        y = y * weight.view(shape)
    if bias is not None:
        y = y + bias.view(shape)
    with torch.no_grad():
        unbiased = var * count / max(count - 1, 1)
        running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)
        running_var.mul_(1 - momentum).add_(unbiased, alpha=momentum)
    return y


def batch_norm_reference(full: torch.Tensor, channels: int, momentum: float = 0.1,
                         eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(output, running_mean, running_var) of ``F.batch_norm`` on the whole batch, from fresh stats."""
    running_mean, running_var = torch.zeros(channels, dtype=full.dtype), torch.ones(channels, dtype=full.dtype)
    out = F.batch_norm(full, running_mean, running_var, training=True, momentum=momentum, eps=eps)
    return out, running_mean, running_var


def sync_bn_rank(full: torch.Tensor, allreduce: AllReduce = dist.all_reduce) -> tuple[torch.Tensor, ...]:
    """In a rank: normalise this rank's rows of ``full`` (split evenly by rank) with ``sync_batch_norm``.

    Returns (rows, running_mean, running_var) for comparison with ``batch_norm_reference``.
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = full.tensor_split(world)[rank]
    channels = full.shape[1]
    running_mean, running_var = torch.zeros(channels, dtype=full.dtype), torch.ones(channels, dtype=full.dtype)
    y = sync_batch_norm(mine, running_mean, running_var, allreduce=allreduce)
    return y, running_mean, running_var
