"""The benchmark rows of every chapter (registered with ``bench.row``)."""
from __future__ import annotations

import torch

from ... import device
from ...tensor import Tensor
from .timing import row


@row("ch01 view of a 64x64 tensor (header only)")
def _view():
    t = torch.arange(64 * 64, dtype=torch.float32).view(64, 64)
    m = Tensor.from_torch(t)
    return (lambda: m.view(32, 128)), (lambda: t.view(32, 128))


@row("ch01 contiguous() of a transposed 64x64 float32")
def _contiguous():
    t = torch.arange(64 * 64, dtype=torch.float32).view(64, 64).t()
    m = Tensor.from_torch(t)
    return (lambda: m.contiguous()), (lambda: t.contiguous())


# ------------------------------------------------------------------ chapter 02
# The reference kernels against torch on the same inputs, allocation included on
# both sides (torch allocates its outputs too). A 4096x4096 float32 is 64 MiB.
def _ch02_matrix(n: int = 4096) -> torch.Tensor:
    return torch.randn(n, n, generator=torch.Generator().manual_seed(0))


@row("ch02 map relu, contiguous 4096x4096 float32")
def _map_contiguous():
    t = _ch02_matrix()
    m = Tensor.from_torch(t)
    return (lambda: m.relu()), (lambda: t.relu())


@row("ch02 map relu, transposed 4096x4096 float32")
def _map_transposed():
    t = _ch02_matrix().t()  # the output follows the input's layout on both sides
    m = Tensor.from_torch(t)
    return (lambda: m.relu()), (lambda: t.relu())


@row("ch02 zip add, 4096x4096 + 4096 (broadcast row)")
def _zip_broadcast():
    t, v = _ch02_matrix(), torch.randn(4096)
    m, mv = Tensor.from_torch(t), Tensor.from_torch(v)
    return (lambda: m + mv), (lambda: t + v)


@row("ch02 reduce sum(dim=1), 4096x4096 float32")
def _reduce_rows():
    t = _ch02_matrix()
    m = Tensor.from_torch(t)
    return (lambda: m.sum(1)), (lambda: t.sum(1))


def _matmul_row(n: int):
    @row(f"ch02 matmul {n}x{n} float32 (ratio 4.0x = 25% of torch.mm's GFLOP/s)")
    def _matmul():
        a, b = _ch02_matrix(n), _ch02_matrix(n).t().contiguous()
        ma, mb = Tensor.from_torch(a), Tensor.from_torch(b)
        return (lambda: ma @ mb), (lambda: torch.mm(a, b))


for _n in (256, 512, 1024):
    _matmul_row(_n)


def _gpu_rows() -> None:
    """GPU rows, only with a real GPU: minikernel's GPU kernels (synchronized) against torch's CPU."""

    if device.CUDA_BACKEND != "gpu":
        return  # the simulator runs Python threads: timing it says nothing about GPUs

    @row("ch02 cuda map relu 4096x4096 float32 (vs torch cpu)", sync=device.synchronize)
    def _gpu_map():
        t = _ch02_matrix()
        g = Tensor.from_torch(t).cuda()
        return (lambda: g.relu()), (lambda: t.relu())

    @row("ch02 cuda reduce sum(dim=1) 4096x4096 float32 (vs torch cpu)", sync=device.synchronize)
    def _gpu_reduce():
        t = _ch02_matrix()
        g = Tensor.from_torch(t).cuda()
        return (lambda: g.sum(1)), (lambda: t.sum(1))

    @row("ch02 cuda matmul 1024x1024 float32 (vs torch cpu)", sync=device.synchronize)
    def _gpu_matmul():
        a, b = _ch02_matrix(1024), _ch02_matrix(1024)
        ga, gb = Tensor.from_torch(a).cuda(), Tensor.from_torch(b).cuda()
        return (lambda: ga @ gb), (lambda: torch.mm(a, b))


_gpu_rows()
