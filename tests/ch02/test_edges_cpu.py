"""Chapter 02 edge cases for the CPU kernels: sizes past every chunk and tile.

The kernels split work in blocks (``CPU_CHUNK`` elements per map/zip task,
``CPU_TILE_M x CPU_TILE_N`` output tiles and ``CPU_TILE_K`` steps of the inner
dimension in the matmul). The hypothesis tests use small tensors, which fit in one
block; here every size spans at least three blocks and ends in a partial one.
"""
from __future__ import annotations

import pytest
import torch

from minikernel import Tensor
from minikernel.aten import reduce_ops
from minikernel.kernels import launch
from minikernel.kernels.scalar_ops import BINARY, MAX, SUM, UNARY
from minikernel.kernels.sizes import CPU_CHUNK, CPU_REDUCE_STRIP, CPU_TILE_K, CPU_TILE_M, CPU_TILE_N
from tests.ch02.strategies import assert_values, blank_like_contiguous, kernel_args
from tests.ch02.test_cpu_kernels import _random

BIG = 3 * CPU_CHUNK + 7  # three whole chunks and a partial one


def _transposed(rows: int, cols: int, dtype=torch.float64, seed: int = 0) -> torch.Tensor:
    """A (rows, cols) view of a (cols, rows) tensor: not contiguous, rows not adjacent."""
    return _random((cols, rows), dtype, seed).t()


@pytest.mark.exercise("2.2")
@pytest.mark.parametrize("shape", [(BIG,), (3, BIG // 3 + 1)], ids=str)
def test_cpu_map_past_three_chunks(shape):
    t = _random(shape, torch.float64, 1)
    expected = torch.neg(t)
    out = blank_like_contiguous(t.shape, t.dtype)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(t)
    launch.kernel("cpu", "map")(UNARY["neg"], o_storage, o_shape, o_strides, o_offset, a_storage, a_strides, a_offset)
    assert_values(out, expected)


@pytest.mark.exercise("2.2")
def test_unary_op_past_three_chunks_on_a_transposed_view():
    t = _transposed(131, 3 * CPU_CHUNK // 131 + 5)
    assert t.numel() > 3 * CPU_CHUNK and t.numel() % CPU_CHUNK
    assert_values(Tensor.from_torch(t).exp().to_torch(), t.exp())


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("shape", [(BIG,), (3, BIG // 3 + 1)], ids=str)
def test_cpu_zip_past_three_chunks(shape):
    a, b = _random(shape, torch.float64, 2), _random(shape[-1:], torch.float64, 3)  # b broadcast over rows
    expected = a - b
    out = blank_like_contiguous(a.shape, a.dtype)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(a)
    b_storage, _, b_strides, b_offset = kernel_args(b.expand(shape))
    launch.kernel("cpu", "zip")(BINARY["sub"], o_storage, o_shape, o_strides, o_offset,
                                a_storage, a_strides, a_offset, b_storage, b_strides, b_offset)
    assert_values(out, expected)


@pytest.mark.exercise("2.3")
def test_binary_op_past_three_chunks_with_broadcasting():
    a = _transposed(131, 3 * CPU_CHUNK // 131 + 5, seed=4)
    b = _random((a.shape[1],), torch.float64, 5)
    assert_values((Tensor.from_torch(a) * Tensor.from_torch(b)).to_torch(), a * b)


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("shape, dim", [((3 * CPU_CHUNK // 7 + 5, 7), 1),   # outputs in 4 task groups
                                        ((2, BIG), 1),                       # a row longer than a chunk
                                        ((3, BIG // 3), 0)], ids=str)         # stride along dim 0
@pytest.mark.parametrize("name", ["sum", "amax"])
def test_cpu_reduce_past_three_chunks(shape, dim, name):
    t = _random(shape, torch.float64, 6) - 5.0  # all negative mostly: amax must start from -inf
    expected = getattr(torch, name)(t, dim, keepdim=True)
    out = blank_like_contiguous(expected.shape, t.dtype)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, a_shape, a_strides, a_offset = kernel_args(t)
    op = SUM if name == "sum" else MAX
    launch.kernel("cpu", "reduce")(op, reduce_ops._identity(op, a_storage.dtype), o_storage, o_shape, o_strides, o_offset,
                                   a_storage, a_shape, a_strides, a_offset, dim)
    assert_values(out, expected)


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("make, dim", [
    (lambda t: t, 0),                                  # (5, 3*STRIP+7): outputs side by side, 4 strips
    (lambda t: t.t(), 1),                              # transposed: the kept dim 0 is the packed one
    (lambda t: t.t(), 0),                              # transposed, along its packed dim
    (lambda t: t.reshape(5, 1, -1)[:, :, ::2], 0),     # a kept dim of stride 2
    (lambda t: t.reshape(5, 7, -1).transpose(1, 2), 2),  # a middle dim of a 3-d view
], ids=["dim0", "T-dim1", "T-dim0", "step2", "3d-middle"])
@pytest.mark.parametrize("name", ["sum", "amax"])
def test_cpu_reduce_over_any_dim_of_any_layout(make, dim, name):
    """Whichever way the kernel walks the input, each output folds its whole row."""
    base = _random((5, 7 * (3 * CPU_REDUCE_STRIP + 7)), torch.float64, 7) - 5.0
    base[2, 11] = float("nan")  # amax propagates NaN like torch, on every path
    t = make(base)
    expected = getattr(torch, name)(t, dim, keepdim=True)
    out = blank_like_contiguous(expected.shape, t.dtype)
    o_storage, o_shape, o_strides, o_offset = kernel_args(out)
    a_storage, a_shape, a_strides, a_offset = kernel_args(t)
    op = SUM if name == "sum" else MAX
    launch.kernel("cpu", "reduce")(op, reduce_ops._identity(op, a_storage.dtype), o_storage, o_shape, o_strides, o_offset,
                                   a_storage, a_shape, a_strides, a_offset, dim)
    assert_values(out, expected)


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("n, k, m", [(3, 3 * CPU_TILE_K + 5, 5),                          # k: 4 blocks
                                     (3 * CPU_TILE_M + 3, 9, 3 * CPU_TILE_N + 1),          # n, m: 4 tiles
                                     (CPU_TILE_M + 1, 2 * CPU_TILE_K + 1, CPU_TILE_N + 3)], ids=str)
def test_cpu_matmul_past_three_blocks(n, k, m):
    # integer values: the sum is exact whatever the order, so any blocking must match torch exactly
    x, y = _random((2, n, k), torch.int64, 8).double(), _random((1, k, m), torch.int64, 9).double()
    expected = torch.matmul(x, y)
    out = blank_like_contiguous(expected.shape, x.dtype)
    o_storage, shape, o_strides, o_offset = kernel_args(out)
    a_storage, _, a_strides, a_offset = kernel_args(x)
    b_storage, _, b_strides, b_offset = kernel_args(y.expand(2, k, m))
    launch.kernel("cpu", "matmul")(o_storage, shape, o_strides, o_offset, a_storage, a_strides, a_offset,
                                   b_storage, b_strides, b_offset, k)
    assert torch.equal(out, expected)


@pytest.mark.exercise("2.5")
def test_matmul_of_transposed_operands_past_three_k_blocks():
    k = 3 * CPU_TILE_K + 1
    x, y = _transposed(5, k, seed=10), _transposed(k, 7, seed=11)
    assert_values((Tensor.from_torch(x) @ Tensor.from_torch(y)).to_torch(), x @ y)


@pytest.mark.exercise("2.2")
@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1), (0,), (2, 0, 3)], ids=str)
def test_unary_op_on_0d_size_one_and_empty(shape):
    t = _random(shape, torch.float64, 12)
    assert_values(Tensor.from_torch(t).neg().to_torch(), t.neg())


@pytest.mark.exercise("2.3")
@pytest.mark.parametrize("a_shape, b_shape", [((), ()), ((), (3,)), ((1, 3), (2, 1)), ((0, 3), (3,)), ((2, 0), (1,))],
                         ids=str)
def test_binary_op_on_0d_size_one_and_empty(a_shape, b_shape):
    a, b = _random(a_shape, torch.float64, 13), _random(b_shape, torch.float64, 14)
    assert_values((Tensor.from_torch(a) - Tensor.from_torch(b)).to_torch(), a - b)


@pytest.mark.exercise("2.4")
@pytest.mark.parametrize("shape, dim", [((), 0), ((1,), 0), ((0, 3), 0), ((3, 0), 0), ((1, 4), 1)], ids=str)
def test_sum_of_0d_size_one_and_empty(shape, dim):
    t = _random(shape, torch.float64, 15)
    assert_values(Tensor.from_torch(t).sum(dim, True).to_torch(), t.sum(dim, True))


@pytest.mark.exercise("2.5")
@pytest.mark.parametrize("a_shape, b_shape", [((1, 1), (1, 1)), ((2, 0), (0, 3)), ((0, 2), (2, 3)), ((3, 1, 2), (2, 0))],
                         ids=str)
def test_matmul_of_size_one_and_empty(a_shape, b_shape):
    a, b = _random(a_shape, torch.float64, 16), _random(b_shape, torch.float64, 17)
    assert_values((Tensor.from_torch(a) @ Tensor.from_torch(b)).to_torch(), a @ b)
