"""The benchmark rows of every chapter (registered with ``bench.row``)."""
from __future__ import annotations

import torch

from .bench import row
from .tensor import Tensor


@row("ch01 view of a 64x64 tensor (header only)")
def _view():
    t = torch.arange(64 * 64, dtype=torch.float32).view(64, 64)
    m = Tensor.from_torch(t)
    return (lambda: m.view(32, 128)), (lambda: t.view(32, 128))


@row("ch01 contiguous() of a transposed 64x64 float32")
def _contiguous():
    t = torch.arange(64 * 64, dtype=torch.float32).view(64, 64).t()
    m = Tensor.from_torch(t)
    return (lambda: m.contiguous()), (lambda: t.contiguous())
