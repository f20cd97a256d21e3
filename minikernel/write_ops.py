"""Writing into a tensor's memory: the CPU/CUDA backend kernels of ``aten::copy_``,
``aten::fill_.Scalar``, ``aten::zero_`` and ``aten::index_put_`` (a boolean mask).

They only write. The version bump is the ``ADInplaceOrView`` kernel's and the graph
is the ``Autograd`` kernel's (``aten/registration.py``), as in PyTorch, so every write —
the autograd layer's own, which stores an in-place op's result with ``copy_`` — runs
here once, and a dispatch mode sees it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import shape_rules as R
from .tensor import Tensor


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


def _key(indices: tuple) -> tuple:
    """The index as numpy takes it: tensors become arrays (a boolean mask stays boolean)."""
    return tuple(k.to_numpy() if isinstance(k, Tensor) else k for k in indices)


def index_put_(self: Tensor, indices: tuple, values: Tensor, accumulate: bool = False) -> Tensor:
    """``self[indices] = values`` (``accumulate``: ``self[indices] += values``, where an index
    named twice adds twice). ``indices`` is a tuple of ints, slices, ``None``, ``...``, integer
    tensors and boolean masks, checked by the caller. Matches ``Tensor.index_put_``."""
    key, given = _key(indices), values.to_numpy()
    if self.numel() == 0 and not any(isinstance(k, np.ndarray) and k.size and n == 0 for k, n in zip(key, self.shape)):
        return self  # nothing to write (and torch checks no index it does not use)
    target = self._numpy_view()
    if accumulate:
        np.add.at(target, key, given)
    else:
        target[key] = given
    return self
