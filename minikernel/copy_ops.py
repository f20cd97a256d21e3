"""Copies into new memory: the CPU/CUDA backend kernels of ``aten::clone`` and ``aten::_to_copy``
(``Tensor.to(device)``, ``.cpu()``, ``.cuda()``).

Autograd records ``clone`` (``CloneBackward0``, ``autograd/pointwise.py``) by calling
this kernel below the Autograd key; ``_to_copy`` is not recorded (minikernel's
autograd runs on the CPU), so the Autograd key falls through for it.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import device as dev
from .device import DeviceLike
from .kernels.layout import copy_strides, is_non_overlapping_and_dense
from .tensor import Tensor


def clone(x: Tensor) -> Tensor:
    """A copy of ``x`` in new memory (CPU), laid out as ``torch.clone`` lays it out
    (``memory_format=torch.preserve_format``, as ``_to_copy``): a dense, non-overlapping
    ``x`` keeps its strides, any other is packed densely in the same dimension order."""
    if x.is_cuda:
        raise RuntimeError("minikernel's autograd runs on the CPU: move the tensor with .cpu() first")
    return _to_copy(x)


def _to_copy(x: Tensor, *, device: DeviceLike = None) -> Tensor:
    """``x`` copied to ``device`` ("cpu" or "cuda").

    Like ``torch.Tensor.to`` (``memory_format=torch.preserve_format``): a
    non-overlapping, dense tensor keeps its strides (a transposed matrix stays
    transposed); any other view is packed densely in the same dimension order
    (the strides ``torch.empty_like`` gives). Copies to the GPU are synchronous,
    as torch's are from pageable memory.
    """
    target = dev.device(x.device if device is None else device)
    if target.type == "cuda":
        dev.check_cuda()
    storage, shape, old, offset = x._storage, x.shape, x.stride(), x.storage_offset()
    n = x.numel()
    strides = copy_strides(shape, old)  # torch.empty_like's
    if is_non_overlapping_and_dense(shape, old):
        block = storage[offset:offset + n]  # exactly the elements, same layout
        if x.device.type == target.type == "cpu":
            host = block.copy()
        elif target.type == "cuda":
            host = block
        else:
            host = block.copy_to_host() if n else np.empty(0, x.dtype)
    else:
        source = x if not x.is_cuda else Tensor(storage.copy_to_host(), shape, old, offset)
        size = 1 + sum((d - 1) * st for d, st in zip(shape, strides)) if n else 0
        host = np.empty(size, x.dtype)
        Tensor(host, shape, strides, 0)._numpy_view()[...] = source._numpy_view()
    if target.type == "cuda":
        if x.is_cuda and is_non_overlapping_and_dense(shape, old):
            host = host.copy_to_host() if n else np.empty(0, x.dtype)
        return Tensor(cuda.to_device(np.ascontiguousarray(host)), shape, strides, 0)
    return Tensor(host, shape, strides, 0)
