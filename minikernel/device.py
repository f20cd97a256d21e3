"""Devices: where a tensor's storage lives, and where GPU kernels run.

minikernel has two devices, like PyTorch's two most common ones: ``"cpu"`` (a numpy
array in host memory) and ``"cuda"`` (a numba device array). GPU kernels are numba
CUDA kernels. On a machine with an NVIDIA GPU they compile to native code; without
one they run on **numba's CUDA simulator**, which executes every CUDA thread as a
Python thread — slow, but the same kernel source, the same ``threadIdx`` /
``blockIdx`` / shared memory / ``syncthreads`` semantics.

The simulator has to be chosen *before numba is first imported*
(``NUMBA_ENABLE_CUDASIM=1``), so minikernel takes numba from ``numba_setup.py``, which
imports this module first; this module decides, without importing numba:

* ``NUMBA_ENABLE_CUDASIM`` already set: honoured as given (1 = simulator, 0 = real GPU);
* a GPU that the NVIDIA driver reports (asked without initializing CUDA here: see
  :func:`cuda_device_count`): the real GPU;
* otherwise: it sets ``NUMBA_ENABLE_CUDASIM=1`` itself (and child processes inherit it).

On a GPU it also names minikernel's caching allocator as numba's memory manager
(``NUMBA_CUDA_MEMORY_MANAGER=minikernel.cuda_allocator``, unless already set): see
:mod:`minikernel.cuda_allocator`.

``CUDA_BACKEND`` records the outcome: ``"gpu"``, ``"simulator"`` or ``"unavailable"``
(numba was imported earlier without the simulator and there is no GPU, or this
platform has no ``numba.cuda`` at all: numba-cuda publishes no macOS build, and a
numba without its own ``numba.cuda`` then has no simulator either).
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from typing import Union

_SIM_VAR = "NUMBA_ENABLE_CUDASIM"
_MEMORY_MANAGER_VAR, _CACHING_ALLOCATOR = "NUMBA_CUDA_MEMORY_MANAGER", "minikernel.cuda_allocator"
_NVML = ("libnvidia-ml.so.1", "libnvidia-ml.so", "nvml.dll")
_CUDA_DRIVERS = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")
# Asked in a child process when the driver has no NVML beside it (see cuda_device_count).
_ASK_CUDA = ("import ctypes, sys\n"
             "for name in sys.argv[1:]:\n"
             "    try:\n"
             "        driver = ctypes.CDLL(name)\n"
             "    except OSError:\n"
             "        continue\n"
             "    count = ctypes.c_int(0)\n"
             "    ok = driver.cuInit(0) == 0 and driver.cuDeviceGetCount(ctypes.byref(count)) == 0\n"
             "    print(count.value if ok else 0)\n"
             "    break\n"
             "else:\n"
             "    print(0)\n")


def _load(names: tuple[str, ...]):
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _visible(count: int) -> int:
    """How many of ``count`` devices ``CUDA_VISIBLE_DEVICES`` leaves visible (CUDA reads
    the list up to its first invalid entry; "" or "-1" hides every device)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        return count
    valid = 0
    for entry in listed.split(","):
        entry = entry.strip()
        if not entry or entry.startswith("-"):
            break
        valid += 1
    return min(count, valid)


def cuda_device_count() -> int:
    """Devices the NVIDIA driver reports (0 without a driver), without initializing CUDA here.

    Asked through NVML, the driver's management library, not through CUDA: a process
    that has initialized CUDA (``cuInit``) cannot use it in a child it forks, and the
    grader forks one child per exercise. Where the driver comes without NVML, a short
    child process asks CUDA instead. ``CUDA_VISIBLE_DEVICES`` is honoured.
    """
    nvml = _load(_NVML)
    if nvml is not None:
        count = ctypes.c_uint(0)
        if nvml.nvmlInit_v2() != 0:
            return 0
        try:
            found = count.value if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0 else 0
        finally:
            nvml.nvmlShutdown()
        return _visible(found)
    if _load(_CUDA_DRIVERS) is None:
        return 0
    try:
        asked = subprocess.run([sys.executable, "-c", _ASK_CUDA, *_CUDA_DRIVERS], capture_output=True, text=True,
                               timeout=60)
        return int(asked.stdout.strip() or 0)  # the child's CUDA already honoured CUDA_VISIBLE_DEVICES
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


def _has_numba_cuda() -> bool:
    """Whether ``numba.cuda`` can be imported here (numba-cuda, or numba's own), without importing numba."""
    if importlib.util.find_spec("numba_cuda") is not None:
        return True
    numba = importlib.util.find_spec("numba")
    return numba is not None and any(os.path.isfile(os.path.join(folder, "cuda", "__init__.py"))
                                     for folder in numba.submodule_search_locations or ())


def _no_simulator_reason() -> str:
    return (f"numba's CUDA simulator is not available on this platform ({platform.system()} "
            f"{platform.machine()}): numba-cuda publishes no build for it and the installed numba has no "
            "numba.cuda of its own. The GPU exercises (2.6-2.9, 5.6, 5.7) run on Linux or Windows; "
            "everything else runs here")


def _choose_backend() -> tuple[str, str]:
    """(backend, why) — and switch the simulator on when that is the choice."""
    explicit = os.environ.get(_SIM_VAR, "").strip()
    if explicit:
        if explicit == "1":
            return "simulator", f"{_SIM_VAR}=1 was set"
        return "gpu", f"{_SIM_VAR}={explicit} was set"
    if not _has_numba_cuda():
        return "unavailable", _no_simulator_reason()
    devices = cuda_device_count()
    if devices:
        return "gpu", f"the CUDA driver reports {devices} device(s)"
    if "numba" in sys.modules:
        return "unavailable", ("numba was imported before minikernel, without a GPU and without "
                               f"{_SIM_VAR}=1; import minikernel first (or set {_SIM_VAR}=1 before "
                               "starting Python) to run the GPU kernels on the simulator")
    os.environ[_SIM_VAR] = "1"
    return "simulator", "no CUDA device was found, so numba's CUDA simulator is on"


CUDA_BACKEND, CUDA_REASON = _choose_backend()
if CUDA_BACKEND == "gpu":  # read by numba when it is imported; numba imported earlier keeps its own
    os.environ.setdefault(_MEMORY_MANAGER_VAR, _CACHING_ALLOCATOR)
#: True when "cuda" tensors and GPU kernels run on numba's CUDA simulator.
SIMULATOR = CUDA_BACKEND == "simulator"


def is_available() -> bool:
    """Whether minikernel can run ``"cuda"`` tensors here (a GPU, or the simulator).

    Unlike ``torch.cuda.is_available()``, this is True without a GPU when numba's
    simulator is on: the GPU path of this course always runs somewhere.
    """
    return CUDA_BACKEND != "unavailable"


def check_cuda() -> None:
    """Raise a RuntimeError that says why, when the "cuda" device cannot be used."""
    if not is_available():
        raise RuntimeError(f"minikernel's cuda device is unavailable: {CUDA_REASON}")


def synchronize() -> None:
    """Wait until every kernel launched on the GPU has finished (``torch.cuda.synchronize()``).

    Kernel launches return before the kernel runs; time GPU work only after this.
    On the simulator a launch already runs to completion, so this returns at once.
    """
    check_cuda()
    from numba import cuda

    cuda.synchronize()


@dataclass(frozen=True)
class Device:
    """Where a tensor lives, like ``torch.device``: ``Device("cpu")``, ``Device("cuda", 0)``."""

    type: str
    index: int | None = None

    def __post_init__(self):
        if self.type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {self.type}")
        if self.type == "cpu" and self.index not in (None, 0):
            raise RuntimeError(f"minikernel has one cpu device, got index {self.index}")
        if self.type == "cuda" and self.index not in (None, 0):
            raise RuntimeError(f"minikernel uses one GPU, cuda:0; got cuda:{self.index}")

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"


DeviceLike = Union[str, Device]


def device(spec: DeviceLike) -> Device:
    """Parse ``"cpu"``, ``"cuda"`` or ``"cuda:0"`` (or pass a Device through).

    Example::

        >>> device("cuda:0")
        device(type='cuda', index=0)
    """
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"a device is a string like 'cpu' or 'cuda', got {type(spec).__name__}")
    kind, _, index = spec.partition(":")
    if index and not index.isdigit():
        raise RuntimeError(f"Invalid device string: '{spec}'")
    return Device(kind, int(index) if index else None)
