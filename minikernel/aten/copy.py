"""Writes into a tensor's memory and copies into new memory (ATen's ``Copy.cpp``,
``Fill.cpp``, ``TensorConversions.cpp``): the CPU/CUDA backend kernels of ``aten::copy_``,
``aten::fill_.Scalar``, ``aten::zero_``, ``aten::clone`` and ``aten::_to_copy``
(``Tensor.to(device)``, ``.cpu()``, ``.cuda()``).

The writes only write. The version bump is the ``ADInplaceOrView`` kernel's and the graph
is the ``Autograd`` kernel's (``aten/registration.py``), as in PyTorch, so every write —
the autograd layer's own, which stores an in-place op's result with ``copy_`` — runs
here once, and a dispatch mode sees it.

Autograd records ``clone`` (``CloneBackward0``, ``autograd/pointwise.py``) by calling
its kernel below the Autograd key; ``_to_copy`` is not recorded (minikernel's autograd
runs on the CPU), so the Autograd key falls through for it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import device as dev
from ..device import DeviceLike
from ..kernels.layout import copy_strides, is_non_overlapping_and_dense
from ..numba_setup import cuda
from ..tensor import Tensor
from . import shape_rules as R


# ------------------------------------------------------------------- writes
def _store(self: Tensor, values: np.ndarray) -> Tensor:
    """``values`` (already of ``self``'s shape) into ``self``'s memory, cast to its dtype."""
    if values.shape != self.shape:
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(values.shape)}")
    self._numpy_view()[...] = values
    return self


def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """``src`` broadcast to ``self``'s shape and cast to its dtype. Matches ``Tensor.copy_``."""
    return _store(self, np.broadcast_to(src.to_numpy(), R.broadcast_shape(self.shape, src.shape)))


def fill_(self: Tensor, value: Any) -> Tensor:
    """Every element becomes ``value``. Matches ``Tensor.fill_`` with a number."""
    return _store(self, np.full(self.shape, value, self.dtype))


def zero_(self: Tensor) -> Tensor:
    """Every element becomes 0. Matches ``Tensor.zero_``."""
    return _store(self, np.zeros(self.shape, self.dtype))


# ------------------------------------------------------------------- copies
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
