"""The benchmark rows of every chapter (registered with ``bench.row``)."""
from __future__ import annotations

import torch

from ...tensor import Tensor
from . import gpu
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
# ``bytes``: the least memory traffic of one call (read the input once, write the
# output once), so GB/s compares with the header's copy bandwidth.
MIB64 = 4096 * 4096 * 4


def _ch02_matrix(n: int = 4096) -> torch.Tensor:
    return torch.randn(n, n, generator=torch.Generator().manual_seed(0))


@row("ch02 map relu, contiguous 4096x4096 float32", bytes=2 * MIB64)
def _map_contiguous():
    t = _ch02_matrix()
    m = Tensor.from_torch(t)
    return (lambda: m.relu()), (lambda: t.relu())


@row("ch02 map relu, transposed 4096x4096 float32", bytes=2 * MIB64)
def _map_transposed():
    t = _ch02_matrix().t()  # the output follows the input's layout on both sides
    m = Tensor.from_torch(t)
    return (lambda: m.relu()), (lambda: t.relu())


@row("ch02 zip add, 4096x4096 + 4096 (broadcast row)", bytes=2 * MIB64 + 4096 * 4)
def _zip_broadcast():
    t, v = _ch02_matrix(), torch.randn(4096)
    m, mv = Tensor.from_torch(t), Tensor.from_torch(v)
    return (lambda: m + mv), (lambda: t + v)


def _reduce_row(label: str, make, shape: tuple[int, ...], dim: int):
    # ``shape``: the input's, known without making it (a row is made only when it runs:
    # importing the rows must not hold 64 MiB inputs in every process that imports them).
    numel = 1
    for size in shape:
        numel *= size

    @row(f"ch02 reduce sum(dim={dim}), {label} float32", bytes=(numel + numel // shape[dim]) * 4)
    def _reduce():
        t = make()
        if tuple(t.shape) != shape:  # the bytes above were computed from ``shape``
            raise AssertionError(f"the row {label!r} declares shape {shape}, its input is {tuple(t.shape)}")
        m = Tensor.from_torch(t)
        return (lambda: m.sum(dim)), (lambda: t.sum(dim))


# Along the packed dim, across it, across it on a transposed view, and a middle dim.
_reduce_row("4096x4096", _ch02_matrix, (4096, 4096), 1)
_reduce_row("4096x4096", _ch02_matrix, (4096, 4096), 0)
_reduce_row("transposed 4096x4096", lambda: _ch02_matrix().t(), (4096, 4096), 1)
_reduce_row("64x1024x256 (middle dim)", lambda: torch.randn(64, 1024, 256, generator=torch.Generator().manual_seed(0)),
            (64, 1024, 256), 1)


def _matmul_row(n: int):
    @row(f"ch02 matmul {n}x{n} float32", flops=2 * n ** 3)
    def _matmul():
        a, b = _ch02_matrix(n), _ch02_matrix(n).t().contiguous()
        ma, mb = Tensor.from_torch(a), Tensor.from_torch(b)
        return (lambda: ma @ mb), (lambda: torch.mm(a, b))


for _n in (256, 512, 1024):
    _matmul_row(_n)


# ------------------------------------------------------------------ chapter 02 on a GPU
# Sizes far beyond the GPU's L2 cache (tens of MiB), so the rates are memory's, and
# long enough that a kernel outlasts Python's launch overhead.
GPU_N = 8192  #: the GPU rows' matrices are GPU_N x GPU_N float32 (256 MiB)


def _on_gpu(t: torch.Tensor) -> tuple[Tensor, torch.Tensor]:
    """The same values as a minikernel "cuda" tensor and a torch tensor on the GPU rows' torch device."""
    return Tensor.from_torch(t).cuda(), t.to(gpu.TORCH_DEVICE)


@row(gpu.label(f"ch02 cuda map relu {GPU_N}x{GPU_N} float32"), gpu.sync, bytes=2 * GPU_N * GPU_N * 4,
     skip=gpu.skip_reason)
def _gpu_map():
    g, t = _on_gpu(_ch02_matrix(GPU_N))
    return (lambda: g.relu()), (lambda: t.relu())


def _gpu_reduce_row(dim: int):
    @row(gpu.label(f"ch02 cuda reduce sum(dim={dim}) {GPU_N}x{GPU_N} float32"), gpu.sync,
         bytes=(GPU_N * GPU_N + GPU_N) * 4, skip=gpu.skip_reason)
    def _gpu_reduce():
        g, t = _on_gpu(_ch02_matrix(GPU_N))
        return (lambda: g.sum(dim)), (lambda: t.sum(dim))


_gpu_reduce_row(1)
_gpu_reduce_row(0)


def _gpu_matmul_row(n: int):
    @row(gpu.label(f"ch02 cuda matmul {n}x{n} float32"), gpu.sync, flops=2 * n ** 3, skip=gpu.skip_reason)
    def _gpu_matmul():
        (ga, a), (gb, b) = _on_gpu(_ch02_matrix(n)), _on_gpu(_ch02_matrix(n).t().contiguous())
        return (lambda: ga @ gb), (lambda: torch.mm(a, b))


for _n in (1024, 4096):
    _gpu_matmul_row(_n)
