"""Chapter 10's CUDA section: streams, events, the caching allocator, pinned copies, cuDNN flags.

Each ``demo_*`` function runs one of the notes' GPU experiments on ``cuda:0`` and
returns what it measured as a dict; it raises :class:`NoCuda` without a CUDA
device. :func:`run_or_show` runs a demo where a GPU is present and otherwise says
that it is skipped and prints the demo's code, so a CPU-only machine shows what
would run without inventing any number. The facts that hold on any build
(``torch.version.cuda``, the allocator functions' forwarding, the cuDNN flags'
defaults, ``CUDA_VISIBLE_DEVICES`` read once at initialization) are in
:func:`build_facts` and :func:`visible_devices_in_subprocess`.

The kernels used to make work take long enough to observe: ``torch.cuda._sleep(cycles)``
spins a GPU thread for ``cycles`` clock cycles (about 1 ms per 10⁶ cycles at ~1.5 GHz),
which is how PyTorch's own stream tests build a race.
"""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import time
import warnings
from typing import Any, Callable

import torch

SPIN_CYCLES = 50_000_000  # ~30 ms of GPU time: longer than launching the next kernels


class NoCuda(RuntimeError):
    """Raised by a demo on a machine without a CUDA device."""


def available() -> bool:
    return torch.cuda.is_available()


def _require() -> torch.device:
    if not available():
        raise NoCuda(f"no CUDA device (torch {torch.__version__}, built with CUDA {torch.version.cuda})")
    return torch.device("cuda", 0)


def device_name() -> str:
    """``torch.cuda.get_device_name(0)`` or ``"no CUDA device"``."""
    return torch.cuda.get_device_name(0) if available() else "no CUDA device"


def run_or_show(demo: Callable[..., dict], **kwargs: Any) -> dict | None:
    """Run ``demo(**kwargs)`` on the GPU and print its results; without one, print
    that it is skipped and the demo's source code. Returns the results or None."""
    if available():
        result = demo(**kwargs)
        print(f"{demo.__name__} on {device_name()}:")
        for key, value in result.items():
            print(f"  {key}: {value}")
        return result
    print(f"{demo.__name__}: SKIPPED — no CUDA GPU on this machine (torch.cuda.is_available() is False).")
    print("This is the code that runs when one is present:\n")
    print(inspect.getsource(demo))
    return None


# ----------------------------------------------------------------- any build


def build_facts() -> dict[str, Any]:
    """What this PyTorch build says about CUDA and cuDNN, GPU or not."""
    return {
        "torch.__version__": torch.__version__,
        "torch.version.cuda": torch.version.cuda,
        "torch.backends.cudnn.version()": torch.backends.cudnn.version(),
        "torch.cuda.is_available()": torch.cuda.is_available(),
        "torch.cuda.device_count()": torch.cuda.device_count(),
        "device name": device_name(),
        "cudnn.benchmark (default)": torch.backends.cudnn.benchmark,
        "cudnn.deterministic (default)": torch.backends.cudnn.deterministic,
        "cudnn.allow_tf32 (default)": torch.backends.cudnn.allow_tf32,
        "cuda.matmul.allow_tf32 (default)": torch.backends.cuda.matmul.allow_tf32,
    }


def reset_max_memory_allocated_forwarding() -> tuple[str, str]:
    """Call ``torch.cuda.reset_max_memory_allocated()``: it now warns and forwards to
    ``reset_peak_memory_stats()``. Returns (the warning, what the call then did)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.cuda.reset_max_memory_allocated()
            outcome = "reset every peak statistic of the current device"
        except (RuntimeError, AssertionError, AttributeError) as err:  # a CPU build has no CUDA functions
            outcome = f"{type(err).__name__}: {err}"
    message = next((str(w.message) for w in caught if issubclass(w.category, FutureWarning)), "(no warning)")
    return message, outcome


VISIBLE_CHILD = """
import os, torch
before = torch.cuda.device_count()         # CUDA initializes here and reads the variable
os.environ["CUDA_VISIBLE_DEVICES"] = ""    # too late: already initialized
print(before, torch.cuda.device_count())
"""


def visible_devices_in_subprocess(value: str) -> tuple[int, int]:
    """Start a Python with ``CUDA_VISIBLE_DEVICES=value`` (``CUDA_DEVICE_ORDER=PCI_BUS_ID``):
    (devices it sees, devices it still sees after changing the variable in-process)."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=value, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    out = subprocess.run([sys.executable, "-c", VISIBLE_CHILD], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return int(out[-2]), int(out[-1])


# ------------------------------------------------------------------ GPU demos


def demo_stream_race(n: int = 1 << 20) -> dict:
    """The notes' side-stream race and its three fixes.

    On the default stream: spin (a long kernel), then ``A.fill_(1)``. On a side
    stream: ``B = A.sum()``. Kernels on different streams may overlap, so without
    a fix the sum can read A before the fill ran (B = 0 instead of n).
    """
    dev = _require()
    results = {}
    for fix in ("none", "torch.cuda.synchronize()", "side.wait_stream(default)", "side.wait_event(event)"):
        A = torch.zeros(n, device=dev)
        torch.cuda.synchronize()
        side, default = torch.cuda.Stream(), torch.cuda.current_stream()
        torch.cuda._sleep(SPIN_CYCLES)  # the "long conv" on the default stream
        A.fill_(1.0)
        event = torch.cuda.Event()
        event.record(default)
        if fix == "torch.cuda.synchronize()":
            torch.cuda.synchronize()           # the host waits for every stream
        with torch.cuda.stream(side):
            if fix == "side.wait_stream(default)":
                side.wait_stream(default)      # the side stream waits for all queued work
            elif fix == "side.wait_event(event)":
                side.wait_event(event)         # ... or only up to the recorded point
            B = A.sum()
            A.record_stream(side)              # tell the allocator A is used on `side` too
        side.synchronize()
        results[f"B with fix {fix}"] = f"{B.item():.0f} (expected {n})"
    return results


def demo_event_timing(size: int = 4096) -> dict:
    """Time a matmul with CUDA events versus a host clock without synchronizing."""
    dev = _require()
    a = torch.randn(size, size, device=dev)
    a @ a  # warm-up: cuBLAS handle, kernel selection
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    a @ a
    end.record()
    host_ms = (time.perf_counter() - t0) * 1e3   # only the launch: the kernel runs asynchronously
    end.synchronize()
    gpu_ms = start.elapsed_time(end)
    return {"host clock without sync (ms)": round(host_ms, 3), "event elapsed_time (ms)": round(gpu_ms, 3),
            "TFLOP/s": round(2 * size**3 / gpu_ms / 1e9, 1)}


def demo_caching_allocator(mib: int = 256) -> dict:
    """memory_allocated / memory_reserved / max_memory_allocated around del and empty_cache."""
    dev = _require()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    MiB = 2**20
    out = {}
    x = torch.empty(mib * MiB // 4, device=dev)
    out["after allocating"] = (torch.cuda.memory_allocated(dev) // MiB, torch.cuda.memory_reserved(dev) // MiB)
    del x
    out["after del (allocated, reserved MiB)"] = (torch.cuda.memory_allocated(dev) // MiB,
                                                  torch.cuda.memory_reserved(dev) // MiB)
    torch.cuda.empty_cache()
    out["after empty_cache"] = (torch.cuda.memory_allocated(dev) // MiB, torch.cuda.memory_reserved(dev) // MiB)
    out["max_memory_allocated (MiB)"] = torch.cuda.max_memory_allocated(dev) // MiB
    torch.cuda.reset_peak_memory_stats(dev)
    out["after reset_peak_memory_stats"] = torch.cuda.max_memory_allocated(dev) // MiB
    return out


def demo_pinned_copies(mib: int = 256) -> dict:
    """Host→device copies from pageable and pinned memory, blocking and non_blocking."""
    dev = _require()
    n = mib * 2**20 // 4
    out = {}
    for kind, host in (("pageable", torch.randn(n)), ("pinned", torch.randn(n).pin_memory())):
        for non_blocking in (False, True):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            host.to(dev, non_blocking=non_blocking)
            end.record()
            returned_ms = (time.perf_counter() - t0) * 1e3
            end.synchronize()
            ms = start.elapsed_time(end)
            out[f"{kind}, non_blocking={non_blocking}"] = (
                f"{mib / 1024 / (ms / 1e3):.1f} GB/s; call returned after {returned_ms:.2f} ms of {ms:.2f} ms")
    return out


def demo_cudnn_flags(batch: int = 64) -> dict:
    """A conv's first and steady-state time with cudnn.benchmark off and on; determinism."""
    dev = _require()
    conv = torch.nn.Conv2d(64, 128, 3, padding=1).to(dev)
    x = torch.randn(batch, 64, 56, 56, device=dev)
    out = {}
    for benchmark in (False, True):
        torch.backends.cudnn.benchmark = benchmark
        times = []
        for _ in range(6):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            conv(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        out[f"benchmark={benchmark}: first call, then median (ms)"] = (round(times[0], 3),
                                                                       round(sorted(times[1:])[2], 3))
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    g = torch.randn(batch, 128, 56, 56, device=dev)
    grads = []
    for _ in range(2):
        conv.zero_grad()
        conv(x).backward(g)
        grads.append(conv.weight.grad.clone())
    torch.backends.cudnn.deterministic = False
    out["deterministic=True: two backward passes bitwise equal"] = torch.equal(*grads)
    return out
