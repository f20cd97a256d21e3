"""Exercise 7.6 edge cases, in one process: asynchronous allreduces, ``.grad`` kept, strided gradients.

Oracle: plain autograd. One process stands in for two ranks with equal gradients: the
"allreduce" doubles each bucket, so after DDP's division by the world size (2) every
``.grad`` must be autograd's own gradient.
"""
from __future__ import annotations

import pytest
import torch

from minikernel.distributed.reducer import Reducer


class _Work:
    """An asynchronous allreduce's handle: the sum lands in the bucket only at ``wait()``."""

    def __init__(self, bucket: torch.Tensor, waits: list):
        self.bucket, self.waits = bucket, waits

    def wait(self) -> bool:
        self.waits.append(self.bucket.numel())
        self.bucket.mul_(2)
        return True


class _Strided(torch.nn.Module):
    """Two parameters whose ``.grad`` is not contiguous (transposed: autograd keeps their strides)."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.w = torch.nn.Parameter(torch.randn(4, 3, generator=g).t())  # (3, 4), strides (1, 3)
        self.b = torch.nn.Parameter(torch.randn(3, 4, generator=g).t())  # (4, 3), strides (1, 4)
        self.c = torch.nn.Parameter(torch.randn(4, generator=g))

    def forward(self, x):
        return ((x @ self.w) @ self.b + self.c[:3]).pow(2).sum() + self.c.sum()


def _double(bucket: torch.Tensor) -> None:
    """A finished (synchronous) allreduce of two ranks holding equal gradients."""
    bucket.mul_(2)


def _run(buckets, allreduce, steps=2):
    """Reducer over _Strided's parameters; ``steps`` backward passes; returns (net, reference, reducer)."""
    net, reference = _Strided(), _Strided()
    reducer = Reducer(list(net.parameters()), buckets, allreduce, world_size=2)
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(4))
    for _ in range(steps):
        reducer.prepare_for_backward()
        net(x).backward()
        reference(x).backward()
    return net, reference, reducer


def _assert_autograds(net, reference):
    for (name, p), q in zip(net.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=lambda m, name=name: f"{name}.grad: {m}")


@pytest.mark.exercise("7.6")
@pytest.mark.parametrize("buckets", [[[0, 1, 2]], [[2], [1, 0]], [[0], [1], [2]]])
def test_an_asynchronous_allreduce_is_waited_for_before_the_means_are_written(buckets):
    waits = []
    net, reference, reducer = _run(buckets, lambda bucket: _Work(bucket, waits))
    _assert_autograds(net, reference)
    assert len(waits) == 2 * len(buckets), "each bucket's work must be waited for once per backward"


@pytest.mark.exercise("7.6")
@pytest.mark.parametrize("buckets", [[[0, 1, 2]], [[1], [0, 2]]])
def test_non_contiguous_gradients_are_averaged_element_by_element(buckets):
    net, reference, _ = _run(buckets, _double)
    assert not net.w.grad.is_contiguous() and not net.b.grad.is_contiguous(), "the test needs strided .grad"
    _assert_autograds(net, reference)


@pytest.mark.exercise("7.6")
def test_the_means_are_written_into_the_same_grad_tensors():
    """``grad.copy_(...)``: each ``.grad`` stays the tensor autograd accumulated into (as torch's DDP keeps it)."""
    net, reference, reducer = _run([[2, 1], [0]], _double, steps=1)
    before = {name: (p.grad, p.grad.data_ptr(), p.grad.stride()) for name, p in net.named_parameters()}
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(5))
    reducer.prepare_for_backward()
    net(x).backward()
    reference(x).backward()
    for name, p in net.named_parameters():
        grad, ptr, stride = before[name]
        assert p.grad is grad and p.grad.data_ptr() == ptr and p.grad.stride() == stride, (
            f"{name}.grad was replaced: copy the mean into it (grad.copy_), do not assign a new tensor")
    _assert_autograds(net, reference)


@pytest.mark.exercise("7.6")
def test_one_gradient_can_complete_several_buckets_at_once():
    """The last gradient of bucket 0 arrives after buckets 1 and 2 are full: all three launch, in order."""
    launched = []

    def allreduce(bucket):
        launched.append(bucket.numel())
        bucket.mul_(2)

    # backward reaches c (index 2) first, then b, then w: bucket 0 = [w] completes last
    net, reference, reducer = _run([[0], [1], [2]], allreduce, steps=1)
    assert launched == [12, 12, 4], f"bucket sizes in launch order: {launched}"
    _assert_autograds(net, reference)
    assert not reducer.expect_autograd_hooks
