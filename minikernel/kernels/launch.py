"""Host side of every kernel: headers to arrays, the loop order, the launch configuration.

By the time a function here runs, ``minikernel.ops`` has done the checks, chosen the
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

import math
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .. import device as dev
from . import cpu, gpu, layout, sizes
from .jit import Kernel

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
    _check_dims(out, a)
    if a.ndim == 0:  # a 0-d tensor is a 1-element row
        out, a, dim = out.as_strided((1,), (1,)), a.as_strided((1,), (1,)), 0
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
