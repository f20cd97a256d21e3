"""Host side of every kernel: headers to arrays, the loop order, the launch configuration.

By the time a function here runs, ``minikernel/aten/tensor_iterator.py`` has done the checks, chosen the
dtypes and allocated the output; inputs arrive broadcast to the output's shape. Each
function turns Tensors into what a kernel takes (flat storage, int64 shape and
stride arrays, offsets), picks the CPU or GPU kernel by the output's device, and on
the GPU chooses the grid:

=========  ==========================================  ==============================
kernel     CPU (exercise)                              GPU grid x block (exercise)
=========  ==========================================  ==============================
map        ``cpu_map`` (2.2)                           ceil(n/THREADS) x THREADS (2.6)
zip        ``cpu_zip`` (2.3)                           ceil(n/THREADS) x THREADS (2.7)
reduce     ``cpu_reduce`` (2.4)                        outputs x REDUCE_THREADS (2.8)
matmul     ``cpu_matmul`` (2.5)                        (ceil(m/T), ceil(n/T), batch) x (T, T) (2.9)
=========  ==========================================  ==============================

GPU launches are asynchronous, like CUDA's: they return before the kernel finishes.
"""
from __future__ import annotations

import contextlib
import math
import threading
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

from .. import device as dev
from . import cpu, gpu, layout, reference, sizes
from .jit import Kernel, raise_if_unfinished

if TYPE_CHECKING:
    from ..tensor import Tensor

KERNELS = {
    "cpu": {"map": Kernel("2.2", cpu, "cpu_map"), "zip": Kernel("2.3", cpu, "cpu_zip"),
            "reduce": Kernel("2.4", cpu, "cpu_reduce"), "matmul": Kernel("2.5", cpu, "cpu_matmul")},
    "cuda": {"map": Kernel("2.6", gpu, "gpu_map"), "zip": Kernel("2.7", gpu, "gpu_zip"),
             "reduce": Kernel("2.8", gpu, "gpu_reduce"), "matmul": Kernel("2.9", gpu, "gpu_matmul")},
}


def kernel(device_type: str, name: str) -> Kernel:
    """The kernel registered for (device, operation) — PyTorch's first dispatch."""
    return KERNELS[device_type][name]


#: dtypes the chapter 02 kernels take; the reference backend takes these and int32, bool.
KERNEL_DTYPES = (np.dtype("float32"), np.dtype("float64"), np.dtype("int64"))


class _Fallback(threading.local):
    allowed = False


_FALLBACK = _Fallback()
_STAND_IN = [True]


def set_reference_fallback(enabled: bool) -> bool:
    """Let the library's numpy stand in for unfinished exercises inside the dispatcher (the
    default): the reference backend for a chapter 02 kernel, numpy's views for chapter 01's
    stride functions (``aten/shape.py``); or not.

    Chapters 01 and 02 turn it off, so every op there runs your code and an unfinished
    exercise stops with its error; the later chapters leave it on, so they run whether or
    not chapters 01 and 02 are finished. Returns the setting it replaces.

    Example::

        >>> launch.set_reference_fallback(False)
        >>> mk.ones(2) + mk.ones(2)   # NotImplementedError: exercise 2.3 (cpu_zip) ...
    """
    before, _STAND_IN[0] = _STAND_IN[0], bool(enabled)
    return before


@contextlib.contextmanager
def reference_fallback() -> Iterator[None]:
    """Inside the block, a CPU op whose kernel is unfinished (or whose dtype no kernel takes)
    runs on the numpy reference backend (``reference.py``) instead of raising.

    The dispatcher's CPU backend runs every op this way; a direct call of an operator's kernel in
    ``minikernel.aten`` or of a kernel (chapter 02's tests, the grader) stays strict and raises the stub's error.
    """
    saved = _FALLBACK.allowed
    _FALLBACK.allowed = True
    try:
        yield
    finally:
        _FALLBACK.allowed = saved


def stand_in_allowed() -> bool:
    """Whether library code may stand in for an unfinished exercise here (inside ``reference_fallback``)."""
    return _FALLBACK.allowed and _STAND_IN[0]


def fallback_allowed(device_type: str) -> bool:
    """Whether the numpy reference backend may compute here (on the CPU, where stand-ins are allowed)."""
    return stand_in_allowed() and device_type == "cpu"


def _unfinished(k: Kernel) -> NotImplementedError | None:
    try:
        raise_if_unfinished(k.function)
    except NotImplementedError as err:
        return err.with_traceback(None)  # (its frames would keep the caller's tensors alive)
    return None


def check_runnable(device_type: str, name: str) -> None:
    """Raise the stub's error if the (device, name) kernel cannot run and nothing may stand in."""
    if not fallback_allowed(device_type):
        kernel(device_type, name).check_implemented()


def _use_reference(device_type: str, name: str, *tensors: "Tensor") -> bool:
    """Run the reference backend: allowed, and the kernel is unfinished or no kernel takes a dtype."""
    if not fallback_allowed(device_type):
        return False
    if any(t.dtype not in KERNEL_DTYPES for t in tensors):
        return True
    return _unfinished(kernel(device_type, name)) is not None


def ints(values: Sequence[int], device_type: str):
    """A shape or strides as an int64 array on the kernel's device."""
    array = np.array(tuple(values), dtype=np.int64)
    if device_type == "cuda" and not dev.SIMULATOR:
        from numba import cuda

        return cuda.to_device(array)
    return array


def _check_dims(*tensors: "Tensor") -> None:
    for t in tensors:
        if t.ndim > sizes.MAX_DIMS:
            raise RuntimeError(f"minikernel's kernels handle at most {sizes.MAX_DIMS} dimensions, got {t.ndim}")


def _elementwise(where: str, name: str, args: tuple, n: int) -> None:
    """Run the "map"/"zip" kernel: parallel loop on the CPU, one thread per element on the GPU."""
    k = kernel(where, name)
    if where == "cpu":
        k(*args, work=n)
    else:
        k.launch((n + sizes.THREADS - 1) // sizes.THREADS, sizes.THREADS, *args)


def map_(op: int, out: "Tensor", a: "Tensor") -> None:
    """``out[i] = op(a[i])``; ``a`` has ``out``'s shape (broadcast already)."""
    if out.numel() == 0:
        return
    if _use_reference(out.device.type, "map", out, a):
        return reference.map_(op, out, a)
    _check_dims(out, a)
    shape, (os_, as_) = layout.iteration_layout(out.shape, out.stride(), a.stride())
    where = out.device.type
    args = (op, out._storage, ints(shape, where), ints(os_, where), out.storage_offset(),
            a._storage, ints(as_, where), a.storage_offset())
    _elementwise(where, "map", args, math.prod(shape))


def zip_(op: int, out: "Tensor", a: "Tensor", b: "Tensor") -> None:
    """``out[i] = op(a[i], b[i])``; ``a`` and ``b`` have ``out``'s shape (broadcast already)."""
    if out.numel() == 0:
        return
    if _use_reference(out.device.type, "zip", out, a, b):
        return reference.zip_(op, out, a, b)
    _check_dims(out, a, b)
    shape, (os_, as_, bs_) = layout.iteration_layout(out.shape, out.stride(), a.stride(), b.stride())
    where = out.device.type
    args = (op, out._storage, ints(shape, where), ints(os_, where), out.storage_offset(),
            a._storage, ints(as_, where), a.storage_offset(), b._storage, ints(bs_, where), b.storage_offset())
    _elementwise(where, "zip", args, math.prod(shape))


def reduce_(op: int, identity, out: "Tensor", a: "Tensor", dim: int) -> None:
    """Fold ``a`` along ``dim`` into ``out``, which has ``a``'s shape with size 1 at ``dim``."""
    if out.numel() == 0:
        return
    if _use_reference(out.device.type, "reduce", out, a):
        return reference.reduce_(op, identity, out, a, dim)
    _check_dims(out, a)
    if a.ndim == 0:  # a 0-d tensor is a 1-element row
        out, a, dim = out._with((1,), (1,)), a._with((1,), (1,)), 0
    where = out.device.type
    args = (op, identity, out._storage, ints(out.shape, where), ints(out.stride(), where), out.storage_offset(),
            a._storage, ints(a.shape, where), ints(a.stride(), where), a.storage_offset(), dim)
    k = kernel(where, "reduce")
    if where == "cpu":
        k(*args, work=a.numel())
    else:
        k.launch(out.numel(), sizes.REDUCE_THREADS, *args)


def matmul_(out: "Tensor", a: "Tensor", b: "Tensor") -> None:
    """``out = a @ b`` for ``(*batch, n, k) @ (*batch, k, m)`` (batch dimensions broadcast already)."""
    if out.numel() == 0:
        return
    if _use_reference(out.device.type, "matmul", out, a, b):
        return reference.matmul_(out, a, b)
    _check_dims(out, a, b)
    where = out.device.type
    inner = a.shape[-1]
    args = (out._storage, ints(out.shape, where), ints(out.stride(), where), out.storage_offset(),
            a._storage, ints(a.stride(), where), a.storage_offset(),
            b._storage, ints(b.stride(), where), b.storage_offset(), inner)
    k = kernel(where, "matmul")
    if where == "cpu":
        k(*args, work=out.numel() * max(inner, 1))
    else:
        n, m = out.shape[-2], out.shape[-1]
        batches = math.prod(out.shape[:-2])
        grid = ((m + sizes.TILE - 1) // sizes.TILE, (n + sizes.TILE - 1) // sizes.TILE, batches)
        k.launch(grid, (sizes.TILE, sizes.TILE), *args)
