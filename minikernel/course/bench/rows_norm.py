"""Chapter 05's benchmark rows: LayerNorm forward, and forward + backward, against PyTorch.

Both sides call the kernel-level operators (no autograd bookkeeping on either):
``native_layer_norm`` then ``native_layer_norm_backward`` with the saved mean and
rstd — minikernel's against ``torch.native_layer_norm`` and
``torch.ops.aten.native_layer_norm_backward``, outputs allocated on both sides.
On the CPU the rows use 4096x1024 float32. The GPU rows (``gpu``) use 16 times
as many rows, against torch on the same GPU when it has CUDA; one more GPU row times
the forward kernel alone (see ``_gpu_forward_kernel``).
"""
from __future__ import annotations

import torch

from ...norm import native_layer_norm, native_layer_norm_backward
from ...norm.native import KERNELS
from ...norm.sizes import NORM_THREADS
from ...tensor import Tensor
from . import gpu
from .timing import row

ROWS, N = 4096, 1024
_MASK = [True, True, True]


def _inputs(dtype=torch.float32, rows: int = ROWS):
    g = torch.Generator().manual_seed(0)
    x, dy = torch.randn(rows, N, generator=g, dtype=dtype), torch.randn(rows, N, generator=g, dtype=dtype)
    w, b = torch.randn(N, generator=g, dtype=dtype), torch.randn(N, generator=g, dtype=dtype)
    return x, w, b, dy


def _torch_calls(x, w, b, dy):
    def forward():
        return torch.native_layer_norm(x, (N,), w, b, 1e-5)

    def forward_backward():
        _, mean, rstd = torch.native_layer_norm(x, (N,), w, b, 1e-5)
        return torch.ops.aten.native_layer_norm_backward(dy, x, (N,), mean, rstd, w, b, _MASK)

    return forward, forward_backward


def _minikernel_calls(x, w, b, dy):

    def forward():
        return native_layer_norm(x, (N,), w, b, 1e-5)

    def forward_backward():
        _, mean, rstd = native_layer_norm(x, (N,), w, b, 1e-5)
        return native_layer_norm_backward(dy, x, (N,), mean, rstd, w, b, _MASK)

    return forward, forward_backward


# Least traffic: forward reads x and writes y; forward+backward also reads x and dy again
# and writes dx (mean/rstd and the weights are small).
@row(f"ch05 layernorm forward {ROWS}x{N} float32", bytes=2 * ROWS * N * 4)
def _forward():
    inputs = _inputs()
    return _minikernel_calls(*[Tensor.from_torch(t) for t in inputs])[0], _torch_calls(*inputs)[0]


@row(f"ch05 layernorm forward+backward {ROWS}x{N} float32", bytes=5 * ROWS * N * 4)
def _forward_backward():
    inputs = _inputs()
    return _minikernel_calls(*[Tensor.from_torch(t) for t in inputs])[1], _torch_calls(*inputs)[1]


# On a GPU: 16x more rows (256 MiB of x), so the data cannot sit in the L2 cache and
# the kernel outlasts Python's launch overhead; the rate compares with the GPU's copy.
GPU_ROWS = 16 * ROWS


@row(gpu.label(f"ch05 cuda layernorm forward {GPU_ROWS}x{N} float32"), gpu.sync, bytes=2 * GPU_ROWS * N * 4,
     skip=gpu.skip_reason)
def _gpu_forward():
    inputs = _inputs(rows=GPU_ROWS)
    mine = _minikernel_calls(*[Tensor.from_torch(t).cuda() for t in inputs])[0]
    return mine, _torch_calls(*[t.to(gpu.TORCH_DEVICE) for t in inputs])[0]


@row(gpu.label(f"ch05 cuda layernorm forward+backward {GPU_ROWS}x{N} float32"), gpu.sync,
     bytes=5 * GPU_ROWS * N * 4, skip=gpu.skip_reason)
def _gpu_forward_backward():
    inputs = _inputs(rows=GPU_ROWS)
    mine = _minikernel_calls(*[Tensor.from_torch(t).cuda() for t in inputs])[1]
    return mine, _torch_calls(*[t.to(gpu.TORCH_DEVICE) for t in inputs])[1]


@row(gpu.label(f"ch05 cuda layernorm forward, kernel alone {GPU_ROWS}x{N} float32"), gpu.sync,
     bytes=2 * GPU_ROWS * N * 4, skip=gpu.skip_reason, min_batch=20)
def _gpu_forward_kernel():
    """The forward kernel launched into arrays allocated once (no checks, no tensors, no
    allocation), 20 launches per timed batch, against ``torch.native_layer_norm``: what the
    kernel itself moves per second, to hold against the GPU's copy bandwidth. The row
    above times the whole call, whose host work (checks, output tensors, array views,
    numba's launch) took longer than the kernel on an H100 (docs/benchmarks.md, *On a GPU*)."""
    inputs = _inputs(rows=GPU_ROWS)
    x, w, b, _ = inputs
    out, stats = torch.empty_like(x), torch.empty(GPU_ROWS)
    x2, w1, b1, out2, mean, rstd = (Tensor.from_torch(t).cuda()._storage for t in (x, w, b, out, stats, stats))
    args = (x2.reshape(GPU_ROWS, N), w1, b1, 1e-5, out2.reshape(GPU_ROWS, N), mean, rstd)
    kernel = KERNELS["cuda"]["forward"]
    theirs = _torch_calls(*[t.to(gpu.TORCH_DEVICE) for t in inputs])[0]
    return (lambda: kernel.launch(GPU_ROWS, NORM_THREADS, *args)), theirs
