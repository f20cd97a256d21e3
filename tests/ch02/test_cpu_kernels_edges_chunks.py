"""Chapter 02 edge cases of the CPU map and zip: each task writes only its own chunk, and a row segment ends
at the row's end.

* In place (``x.neg_()``, ``x.add_(y)``: ``out`` is ``a``), an element that two tasks both
  process is changed twice: a task must stop at the end of its chunk, even inside a row.
* A chunk that starts inside a row (rows whose length does not divide ``CPU_CHUNK``) of a
  non-contiguous input: its first segment runs to that row's end, not a whole row's length
  further. Through the operators the library first orders the dimensions by memory, so
  these cases call the kernels directly.
"""
from __future__ import annotations

import pytest
import torch

from minikernel import Tensor
from minikernel.kernels import launch
from minikernel.kernels.scalar_ops import BINARY, UNARY
from minikernel.kernels.sizes import CPU_CHUNK
from tests.ch02.strategies import assert_values, blank_like_contiguous, kernel_args
from tests.ch02.test_cpu_kernels import _random

BIG = 3 * CPU_CHUNK + 7
COLS = 3 * CPU_CHUNK // 131 + 5  # rows of 380: most chunks start inside a row
# (shape, gap): a contiguous tensor of that shape, or the first columns of wider rows (gap extra
# columns each), which the library cannot merge into one long row
LAYOUTS = [((BIG,), 0), ((3, BIG // 3 + 1), 0), ((131, COLS), 0), ((131, COLS), 20), ((3, BIG // 3 + 1), 1)]


def _in_place_targets(shape, gap, seed):
    """torch's and minikernel's copies of the same (possibly gapped) view."""
    base = _random((*shape[:-1], shape[-1] + gap), torch.float64, seed)
    return base[..., :shape[-1]], Tensor.from_torch(base.clone())[..., :shape[-1]]


@pytest.mark.exercise("2.2")
@pytest.mark.parametrize("name", ["neg", "exp"])
@pytest.mark.parametrize("shape, gap", LAYOUTS, ids=str)
def test_in_place_unary_past_three_chunks(shape, gap, name):
    theirs, mine = _in_place_targets(shape, gap, 11)
    getattr(mine, name + "_")()
    getattr(theirs, name + "_")()
    assert_values(mine.to_torch(), theirs)


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("name", ["add", "mul"])
@pytest.mark.parametrize("shape, gap", LAYOUTS, ids=str)
def test_in_place_binary_past_three_chunks(shape, gap, name):
    (theirs, mine), u = _in_place_targets(shape, gap, 12), _random(shape[-1:], torch.float64, 13)
    getattr(mine, name + "_")(Tensor.from_torch(u))
    getattr(theirs, name + "_")(u)
    assert_values(mine.to_torch(), theirs)


def _transposed(rows: int, cols: int, seed: int) -> torch.Tensor:
    return _random((cols, rows), torch.float64, seed).t()


@pytest.mark.exercise("2.2")
def test_cpu_map_chunks_start_inside_rows_of_a_transposed_input():
    a = _transposed(131, 3 * CPU_CHUNK // 131 + 5, 14)  # rows of 380: chunks start inside rows
    assert CPU_CHUNK % a.shape[1] and a.numel() > 3 * CPU_CHUNK
    out = blank_like_contiguous(a.shape, a.dtype)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(a)
    launch.kernel("cpu", "map")(UNARY["neg"], o_storage, o_shape, o_strides, o_offset, a_storage, a_strides, a_offset)
    assert_values(out, torch.neg(a))


@pytest.mark.exercise("2.3")
def test_cpu_zip_chunks_start_inside_rows_of_a_transposed_input():
    a = _transposed(131, 3 * CPU_CHUNK // 131 + 5, 15)
    b = _random(a.shape, torch.float64, 16)
    out = blank_like_contiguous(a.shape, a.dtype)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(a)
    b_storage, _, b_strides, b_offset = kernel_args(b)
    launch.kernel("cpu", "zip")(BINARY["sub"], o_storage, o_shape, o_strides, o_offset,
                                a_storage, a_strides, a_offset, b_storage, b_strides, b_offset)
    assert_values(out, a - b)
