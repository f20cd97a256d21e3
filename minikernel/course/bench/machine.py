"""What a benchmark figure depends on besides the code: the CPU, its threads, the allocator.

A ratio measured on one CPU says little about another (the matmul's tiles are sized
for the caches, the compiler targets the instruction set it finds), so the bench's
header names the CPU model, the instruction set numba compiles for, the cores, and
every thread setting in force.

``keep_freed_memory`` makes the C allocator keep freed memory for the next
allocation instead of returning it to the operating system. Without it, each call
that allocates a 64 MiB output gets fresh pages from the OS, and the first write to
each 4 KiB page costs a page fault: the figure then measures the OS, differently
from one call to the next. With it, the warm-up calls leave the outputs' pages
touched, and the timed calls (of both minikernel and PyTorch) reuse them.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import time
from pathlib import Path

import llvmlite.binding as llvm
import numba
import torch

#: glibc's mallopt parameters: allocations below this many bytes come from the heap
#: (not fresh pages), and freed heap memory is returned to the OS only above it.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEEP_BYTES = 1 << 30
#: Instruction-set extensions worth naming, widest first (LLVM's feature names).
_ISA_FEATURES = ("avx512f", "avx2", "avx", "sse4.2", "neon", "sve")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware")) and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def isa() -> str:
    """What numba's compiler (LLVM) targets here: its CPU name and widest vector extension, e.g. ``znver4/avx512f``."""
    name = llvm.get_host_cpu_name()
    features = {f[1:] for f in llvm.get_host_cpu_features().flatten().split(",") if f.startswith("+")}
    widest = next((f for f in _ISA_FEATURES if f in features), "")
    return f"{name}/{widest}" if widest else name


def thread_settings() -> str:
    """Threads of torch and numba, numba's threading layer, and the environment variables that set them."""
    env = [f"{v}={os.environ[v]}" for v in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS")
           if v in os.environ]
    try:
        layer = f"{numba.threading_layer()} layer"  # known once a parallel kernel has run
    except ValueError:
        layer = "threading layer not chosen yet: no parallel kernel ran"
    return (f"threads: torch {torch.get_num_threads()}, numba {numba.get_num_threads()} ({layer})"
            + (f", {' '.join(env)}" if env else ", no thread variables set"))


def keep_freed_memory() -> bool:
    """Make glibc's malloc reuse freed memory (warm pages) up to 1 GiB blocks; False where that is not glibc."""
    name = ctypes.util.find_library("c")
    if platform.system() != "Linux" or name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _KEEP_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES))


def load_average() -> float | None:
    """The OS's 1-minute load average (runnable processes; above the cores, they wait), or None."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def _cpu_times() -> tuple[int, int] | None:
    """(all, idle) CPU time of every core since boot, in ticks, from Linux's ``/proc/stat``; None elsewhere."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    except (OSError, ValueError, IndexError):
        return None
    return sum(fields), fields[3] + fields[4]  # idle and iowait


def busy_cores(seconds: float = 0.5) -> float | None:
    """How many cores other processes keep busy, measured over ``seconds`` while this one sleeps (None: unknown).

    On a machine where other work runs, parallel threads wait for time slices: with
    2 threads on 2 cores and one core busy, each parallel step ends when the last
    thread gets its slice, and times come out as multiples of the scheduler's tick
    (4 ms), steady enough to pass the spread check.
    """
    before = _cpu_times()
    time.sleep(seconds)
    after = _cpu_times()
    if before is None or after is None or after[0] <= before[0]:
        return None
    total, idle = after[0] - before[0], after[1] - before[1]
    return (os.cpu_count() or 1) * (1 - idle / total)


def contention(busy: float | None) -> str:
    """The header's word on other processes: how busy the cores were, and a warning when threads must wait."""
    if busy is None:
        return ""
    cores, threads = os.cpu_count() or 1, max(torch.get_num_threads(), numba.get_num_threads())
    text = f"other processes kept {busy:.1f} of {cores} cores busy before the run"
    if busy + threads > cores + 0.5:
        text += (f" (WARNING: with {threads} thread{'s' if threads > 1 else ''}, timings wait on the scheduler: "
                 "not a measurement; run on an idle machine or with fewer threads)")
    return text


def describe(warm_outputs: bool, load_before: float | None = None, busy: float | None = None) -> str:
    """One header line: CPU model, ISA, cores, threads, load average, and whether outputs land on warm pages."""
    memory = ("freed memory kept for reuse (outputs on warm pages)" if warm_outputs
              else "the allocator returns freed memory to the OS (outputs on fresh pages)")
    load, after = "", load_average()
    if after is not None:
        load = (f"; load average {load_before:.1f} before, {after:.1f} after" if load_before is not None
                else f"; load average {after:.1f}")
    other = contention(busy)
    return (f"CPU {cpu_model()} ({isa()}), {os.cpu_count()} cores; {thread_settings()}{load}; {memory}"
            + (f"\n{other}" if other else ""))
