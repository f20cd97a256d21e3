"""New tensors from sizes: the backend kernels of ``aten::zeros``, ``aten::ones`` and
``aten::full``, and the ``BackendSelect`` kernel that picks their backend.

A factory call has no tensor argument, so its key set has no backend key of its own:
the dispatcher gives it ``{BackendSelect, CPU}`` (``dispatch/dispatcher.py``). As in
PyTorch, the ``BackendSelect`` kernel reads the ``device`` argument and redispatches
to that device's backend (``CPU`` or ``CUDA``), whose kernel allocates and fills.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import device as dev
from ..dispatch import BACKENDS, DispatchKey, DispatchKeySet
from ..kernels.layout import contiguous_strides
from ..numba_setup import cuda
from ..tensor import Tensor, float32
from . import shape_rules as R

_BACKENDS = DispatchKeySet(BACKENDS)


def backend_key(device: Any) -> DispatchKey:
    """The backend key of a factory's ``device`` argument (None: the CPU)."""
    if device is None:
        return DispatchKey.CPU
    return DispatchKey.CUDA if dev.device(device).type == "cuda" else DispatchKey.CPU


def backend_keys(keys: DispatchKeySet, device: Any) -> DispatchKeySet:
    """``keys`` with the backend replaced by ``device``'s: where ``BackendSelect`` redispatches."""
    return (keys - _BACKENDS).add(backend_key(device))


def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    """A contiguous tensor of ``size`` holding ``fill_value`` (float32 unless ``dtype`` says otherwise)."""
    shape = R.check_sizes(size)
    dtype = float32 if dtype is None else np.dtype(dtype)
    values = np.full(max(1, math.prod(shape)), fill_value, dtype)
    if backend_key(device) == DispatchKey.CUDA:
        dev.check_cuda()
        return Tensor(cuda.to_device(values), shape, contiguous_strides(shape), 0)
    return Tensor(values, shape, contiguous_strides(shape), 0)


def zeros(size: Sequence[int], *, dtype: Any = None, device: Any = None) -> Tensor:
    """Matches ``torch.zeros(size, dtype=dtype, device=device)``."""
    return full(size, 0, dtype=dtype, device=device)


def ones(size: Sequence[int], *, dtype: Any = None, device: Any = None) -> Tensor:
    """Matches ``torch.ones(size, dtype=dtype, device=device)``."""
    return full(size, 1, dtype=dtype, device=device)
