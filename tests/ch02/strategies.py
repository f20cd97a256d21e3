"""Inputs for the chapter 02 tests: strided torch tensors with random values, and the
raw kernel arguments (flat storage + int64 header arrays) built from them with torch."""
from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import strategies as st

from minikernel import Tensor
from tests.helpers import strided_tensors

DTYPES = [torch.float32, torch.float64, torch.int64]


def _values(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
    return torch.randint(-20, 21, (n,), generator=g, dtype=dtype)


@st.composite
def tensors(draw, max_dims: int = 4, max_side: int = 4, dtype=None, nonempty: bool = False):
    """Views as real code makes them (slices, transposes, expands, views of views) over
    a storage of random values; ``dtype`` drawn from float32/float64/int64 unless given."""
    dtype = dtype or draw(st.sampled_from(DTYPES))
    layout = draw(strided_tensors(max_dims, max_side))
    if nonempty and layout.numel() == 0:
        layout = torch.arange(1 + draw(st.integers(0, 5)))
    storage = _values(max(layout.untyped_storage().nbytes() // layout.element_size(), 1), dtype,
                      draw(st.integers(0, 2**16)))
    return torch.as_strided(storage, layout.shape, layout.stride(), layout.storage_offset())


@st.composite
def broadcastable_pair(draw, max_dims: int = 3, max_side: int = 4):
    """Two shapes that broadcast: dims dropped on the left, sizes replaced by 1."""
    big = tuple(draw(st.lists(st.integers(0, max_side), max_size=max_dims)))

    def smaller():
        keep = draw(st.integers(0, len(big)))
        return tuple(draw(st.sampled_from([n, 1])) for n in big[len(big) - keep:])

    return (big, smaller()) if draw(st.booleans()) else (smaller(), big)


def laid_out(t: torch.Tensor, data) -> torch.Tensor:
    """``t``'s values under a random layout: contiguous, transposed or a sliced view."""
    choice = data.draw(st.sampled_from(["contiguous", "transposed", "sliced"]))
    if choice == "transposed" and t.dim() >= 2:
        return t.transpose(0, -1).contiguous().transpose(0, -1)
    if choice == "sliced" and t.dim() >= 1:
        wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1] + 1, dtype=t.dtype)
        wide[..., 1::2] = t
        return wide[..., 1::2]
    return t


def kernel_args(t: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(flat storage, shape, strides, offset) of a torch tensor, as a kernel takes them."""
    m = Tensor.from_torch(t)
    return m._storage, np.array(t.shape, np.int64), np.array(t.stride(), np.int64), t.storage_offset()


def blank_like_contiguous(shape, dtype: torch.dtype) -> torch.Tensor:
    """A contiguous output filled with a sentinel, so unwritten elements show."""
    fill = float("nan") if dtype.is_floating_point else -999
    return torch.full(tuple(shape), fill, dtype=dtype)


def assert_values(got: torch.Tensor, expected: torch.Tensor, exact_ints: bool = True) -> None:
    """Same shape and dtype; values equal (ints) or close (floats, NaN where torch has NaN)."""
    assert tuple(got.shape) == tuple(expected.shape), f"shape {tuple(got.shape)} != torch's {tuple(expected.shape)}"
    assert got.dtype == expected.dtype, f"dtype {got.dtype} != torch's {expected.dtype}"
    if expected.dtype.is_floating_point:
        rtol = 1e-5 if expected.dtype == torch.float32 else 1e-12
        torch.testing.assert_close(got, expected, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        assert torch.equal(got, expected), f"values differ:\n{got}\ntorch:\n{expected}"


def numel(shape) -> int:
    return math.prod(shape)
