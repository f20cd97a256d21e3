"""Chapter 07 at its edges: the allgather's messages are copies, and DDP's means where the other
ranks' gradients differ from this one's (so that a lost write-back or a division in the wrong
place shows), for contiguous and strided ``.grad``, finished and asynchronous allreduces.

Oracles: the values each rank held before the step (7.2); plain autograd on a twin model, and
the flattened gradients divided by the world size as DDP's reducer copies them into a bucket
before the allreduce (7.6).
"""
from __future__ import annotations

import pytest
import torch

from minikernel.distributed import simulate as S
from minikernel.distributed.reducer import Reducer


# ------------------------------------------------------------------ 7.2
@pytest.mark.exercise("7.2")
@pytest.mark.parametrize("n,length", [(2, 5), (3, 7), (4, 4), (4, 2), (5, 11)])
@pytest.mark.parametrize("dtype", [torch.int64, torch.float64])
def test_an_allgather_message_keeps_the_values_that_were_sent(n, length, dtype):
    """Each Send holds a copy of the chunk it carried: overwriting every buffer afterwards (as the
    next use of the buffers does) does not change what the messages say was sent."""
    data = torch.arange(n * length).reshape(n, length).to(dtype) * 3 - 7
    buffers = [list(row.clone().tensor_split(n)) for row in data]
    for step in range(n - 1):
        held = [[c.clone() for c in b] for b in buffers]
        sends = S.allgather_step(buffers, step)
        for chunk in (c for b in buffers for c in b):
            chunk.fill_(-1)
        for s in sends:
            assert torch.equal(s.values, held[s.src][s.chunk]), (
                f"step {step}: the message {s.src}->{s.dst} (chunk {s.chunk}) changed when the buffers did; "
                "send a copy of the chunk, not a view of the buffer")
        buffers = [[c.copy_(h) for c, h in zip(b, hb)] for b, hb in zip(buffers, held)]
        S.allgather_step(buffers, step)


# ------------------------------------------------------------------ 7.6
class _Net(torch.nn.Module):
    """Parameters with contiguous or transposed (non-contiguous) ``.grad``."""

    def __init__(self, strided: bool):
        super().__init__()
        g = torch.Generator().manual_seed(5)
        w, b = torch.randn(4, 3, generator=g, dtype=torch.float64), torch.randn(3, 4, generator=g, dtype=torch.float64)
        self.w = torch.nn.Parameter(w.t() if strided else w.t().contiguous())  # (3, 4)
        self.b = torch.nn.Parameter(b.t() if strided else b.t().contiguous())  # (4, 3)
        self.c = torch.nn.Parameter(torch.randn(4, generator=g, dtype=torch.float64))

    def forward(self, x):
        return ((x @ self.w) @ self.b + self.c[:3]).pow(2).sum() + self.c.sum()


class _Work:
    def __init__(self, bucket, factor):
        self.bucket, self.factor = bucket, factor

    def wait(self):
        self.bucket.mul_(self.factor)
        return True


@pytest.mark.exercise("7.6")
@pytest.mark.parametrize("world_size", [2, 3, 4])
@pytest.mark.parametrize("buckets", [[[0, 1, 2]], [[2], [1, 0]], [[0], [1], [2]]])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "transposed"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["finished", "async"])
def test_means_over_ranks_with_different_gradients(world_size, buckets, strided, asynchronous):
    """Rank r holds (r + 1) times this rank's gradient, so the allreduce multiplies each bucket by
    N (N + 1) / 2 and every ``.grad`` must become (N + 1) / 2 times autograd's (not its own local
    value, which a write-back into a copy would leave). The allreduce sees the gradients already
    divided by the world size, as DDP copies them into the bucket."""
    factor = world_size * (world_size + 1) / 2
    launched = []

    def allreduce(bucket):
        launched.append(bucket.clone())
        if asynchronous:
            return _Work(bucket, factor)
        bucket.mul_(factor)
        return None

    net, reference = _Net(strided), _Net(strided)
    reducer = Reducer(list(net.parameters()), buckets, allreduce, world_size=world_size)
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    reducer.prepare_for_backward()
    net(x).backward()
    reference(x).backward()
    params = list(reference.parameters())
    assert strided == (not net.w.grad.is_contiguous()), "the test needs the .grad layout it names"
    expected_launch = [torch.cat([params[i].grad.flatten() for i in b]) / world_size for b in buckets]
    assert len(launched) == len(buckets)
    for k, (got, expected) in enumerate(zip(launched, expected_launch)):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=0, msg=lambda m, k=k: (
            f"bucket {k} as the allreduce received it: each gradient flattened and divided by the world size "
            f"({world_size}) before the allreduce: {m}"))
    for (name, p), q in zip(net.named_parameters(), params):
        torch.testing.assert_close(p.grad, q.grad * (world_size + 1) / 2, rtol=1e-12, atol=1e-12,
                                   msg=lambda m, name=name: f"{name}.grad after the allreduce: {m}")
