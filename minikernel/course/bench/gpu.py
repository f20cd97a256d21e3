"""What the GPU rows of the benchmark compare against, and the GPU's own yardsticks.

minikernel's GPU kernels are numba CUDA kernels. On a machine with an NVIDIA GPU
they run natively and are timed against PyTorch **on the same GPU** (cuBLAS for
matmul, ATen's CUDA kernels for the rest) when this PyTorch was built with CUDA, or
against PyTorch on the CPU otherwise (the row's name says which). Without a GPU the
rows are listed as skipped: numba's simulator runs every CUDA thread as a Python
thread, and its timings say nothing about GPUs.

GPU work is asynchronous, so every timed batch ends with :func:`sync`, which waits
for both numba's launches and torch's (one device, one CUDA context, but two
libraries' queues).
"""
from __future__ import annotations

import torch

from ... import device

#: Where the torch side of a GPU row runs: "cuda" when torch can use the GPU, else "cpu".
TORCH_DEVICE = "cuda" if device.CUDA_BACKEND == "gpu" and torch.cuda.is_available() else "cpu"


def skip_reason() -> str | None:
    """Why the GPU rows are not timed here (None when they are)."""
    if device.CUDA_BACKEND == "gpu":
        return None
    return "no CUDA GPU here (the simulator's timings say nothing about GPUs)"


def sync() -> None:
    """Wait for every kernel minikernel (numba) and torch launched on the GPU."""
    device.synchronize()
    if TORCH_DEVICE == "cuda":
        torch.cuda.synchronize()


def label(name: str) -> str:
    """A GPU row's name, saying what the torch side ran on."""
    return f"{name} (vs torch {TORCH_DEVICE})"


def yardsticks(median_ms) -> dict:
    """The GPU's copy bandwidth (read + write of 256 MiB, device to device) and cuBLAS's
    float32 GFLOP/s at 4096x4096, measured now with torch; {} without a CUDA torch."""
    if TORCH_DEVICE != "cuda":
        return {}
    src = torch.ones(64 * 1024 * 1024, device="cuda")  # 256 MiB: far larger than the L2 cache
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src), 3, 15, torch.cuda.synchronize)
    a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    mm_ms = median_ms(lambda: torch.mm(a, b), 3, 15, torch.cuda.synchronize)
    return {"gpu": torch.cuda.get_device_name(0),
            "gpu_copy_gb_per_s": 2 * src.numel() * 4 / (copy_ms * 1e-3) / 1e9,
            "gpu_torch_mm_4096_gflop_per_s": 2 * 4096 ** 3 / (mm_ms * 1e-3) / 1e9,
            "gpu_tf32_matmul": torch.backends.cuda.matmul.allow_tf32}
