"""Chapter 02 edge cases for the GPU kernels: block sizes, barriers, memory traffic.

* map and zip must work for any block size (the global thread index is
  ``blockIdx.x * blockDim.x + threadIdx.x``): launched here with 8 and 32 threads per
  block and several blocks, the last one partial;
* on numba's CUDA simulator, the reduce (2.8) and matmul (2.9) launches are recorded
  (``minikernel.kernels.simcheck``): every thread of a block must reach every
  ``cuda.syncthreads()``, and the global-memory reads must stay within the budget
  that the exercise's docstring states — the technique is what the exercise teaches,
  so a kernel without it fails even when its values are right.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from minikernel import device as dev
from minikernel.aten import reduce_ops
from minikernel.kernels import launch, simcheck, sizes
from minikernel.kernels.scalar_ops import BINARY, MAX, SUM, UNARY
from tests.ch02.strategies import assert_values, blank_like_contiguous
from tests.ch02.test_cpu_kernels import _random
from tests.ch02.test_gpu_kernels import copy_back, gpu_args

needs_simulator = pytest.mark.skipif(not dev.SIMULATOR, reason="counting memory traffic needs the CUDA simulator")
BLOCK_SIZES = [8, 32]


def _host(t: torch.Tensor) -> tuple:
    """(storage, shape, strides, offset) of a torch tensor as host numpy arrays (simulator)."""
    from minikernel import Tensor

    m = Tensor.from_torch(t)
    return m._storage, np.array(t.shape, np.int64), np.array(t.stride(), np.int64), t.storage_offset()


# ------------------------------------------------------------ 2.6 / 2.7: any block size
@pytest.mark.exercise("2.6")
@pytest.mark.parametrize("threads", BLOCK_SIZES)
def test_gpu_map_with_other_block_sizes(threads):
    t = _random((7, 11), torch.float64, 1).t()  # 77 elements: several blocks, the last partial
    expected = torch.neg(t)
    out = blank_like_contiguous(t.shape, t.dtype)
    o_storage, shape, o_strides, o_offset = gpu_args(out)
    a_storage, _, a_strides, a_offset = gpu_args(t)
    blocks = math.ceil(t.numel() / threads)
    launch.kernel("cuda", "map").launch(blocks, threads, UNARY["neg"], o_storage, shape, o_strides, o_offset,
                                        a_storage, a_strides, a_offset)
    copy_back(o_storage, out)
    assert_values(out, expected)


@pytest.mark.exercise("2.7")
@pytest.mark.parametrize("threads", BLOCK_SIZES)
def test_gpu_zip_with_other_block_sizes(threads):
    a, b = _random((7, 11), torch.float64, 2), _random((11,), torch.float64, 3)[2:].clone()[None, :]
    a = a[:, 2:]  # (7, 9) with an offset and a gap; b broadcast over rows
    expected = a * b
    out = blank_like_contiguous(expected.shape, a.dtype)
    o_storage, shape, o_strides, o_offset = gpu_args(out)
    a_storage, _, a_strides, a_offset = gpu_args(a)
    b_storage, _, b_strides, b_offset = gpu_args(b.expand(a.shape))
    blocks = math.ceil(a.numel() / threads)
    launch.kernel("cuda", "zip").launch(blocks, threads, BINARY["mul"], o_storage, shape, o_strides, o_offset,
                                        a_storage, a_strides, a_offset, b_storage, b_strides, b_offset)
    copy_back(o_storage, out)
    assert_values(out, expected)


# ------------------------------------------------------------ 2.8: the tree, measured
def _recorded_reduce(t: torch.Tensor, dim: int, op: int) -> tuple[torch.Tensor, simcheck.Record]:
    expected_shape = list(t.shape)
    expected_shape[dim] = 1
    out = torch.zeros(expected_shape, dtype=t.dtype)
    with simcheck.recording() as record:
        o_storage, o_shape, o_strides, o_offset = _host(out)
        a_storage, a_shape, a_strides, a_offset = _host(t)
        identity = reduce_ops._identity(op, a_storage.dtype)
        launch.kernel("cuda", "reduce").launch(
            out.numel(), sizes.REDUCE_THREADS, op, identity,
            simcheck.CountingArray(o_storage, "out", record), o_shape, o_strides, o_offset,
            simcheck.CountingArray(a_storage, "a", record), a_shape, a_strides, a_offset, dim)
    return out, record


@needs_simulator
@pytest.mark.exercise("2.8")
@pytest.mark.parametrize("name", ["sum", "amax"])
def test_gpu_reduce_tree_within_its_traffic_budget(name):
    r = sizes.REDUCE_THREADS
    length = 3 * r + 3  # more than three elements per thread, the last round partial
    t = _random((length, 3), torch.float64, 4).t() - 3.0  # 3 rows (outputs), strided
    out, record = _recorded_reduce(t, 1, SUM if name == "sum" else MAX)
    assert_values(out, getattr(torch, name)(t, 1, keepdim=True))
    record.check_barriers((3, 1, 1), (r, 1, 1))
    reads = record.total("read", "global", "a")
    assert reads == t.numel(), (f"global reads of the input: measured {reads}, budget {t.numel()} "
                                "(each element read once, by one thread)")
    most = max(record.per_thread("read", "global", "a").values())
    per_thread = math.ceil(length / r)
    assert most <= per_thread, (f"one thread read {most} input elements; budget {per_thread} = ceil(row length "
                                f"{length} / REDUCE_THREADS {r}): split the row over all threads of the block")
    shared = max(record.per_thread("read", "shared").values(), default=0)
    tree = 2 * int(math.log2(r)) + 1
    assert 0 < shared <= tree, (f"one thread read {shared} shared-memory values; budget {tree} = 2 per halving "
                                f"step (log2 {r} steps) + 1 for the result: combine the partials as a tree")
    writes = record.total("write", "global", "out")
    assert writes == out.numel(), f"global writes of out: measured {writes}, budget {out.numel()} (one per output)"


# ------------------------------------------------------------ 2.9: the tiles, measured
@needs_simulator
@pytest.mark.exercise("2.9")
@pytest.mark.parametrize("n, k, m", [(2 * sizes.TILE + 1, 3 * sizes.TILE + 1, 3 * sizes.TILE - 1),
                                     (sizes.TILE, 3 * sizes.TILE, 2 * sizes.TILE)], ids=str)
def test_gpu_matmul_tiles_within_their_traffic_budget(n, k, m):
    tile, batch = sizes.TILE, 2
    x, y = _random((batch, n, k), torch.int64, 5).double(), _random((k, m), torch.int64, 6).double()
    expected = torch.matmul(x, y)
    out = torch.zeros(expected.shape, dtype=x.dtype)
    grid = (math.ceil(m / tile), math.ceil(n / tile), batch)
    with simcheck.recording() as record:
        o_storage, shape, o_strides, o_offset = _host(out)
        a_storage, _, a_strides, a_offset = _host(x)
        b_storage, _, b_strides, b_offset = _host(y.expand(batch, k, m))
        launch.kernel("cuda", "matmul").launch(
            grid, (tile, tile), simcheck.CountingArray(o_storage, "out", record), shape, o_strides, o_offset,
            simcheck.CountingArray(a_storage, "a", record), a_strides, a_offset,
            simcheck.CountingArray(b_storage, "b", record), b_strides, b_offset, k)
    assert torch.equal(out, expected), "wrong values (integer-valued inputs: the sum is exact)"
    record.check_barriers(grid, (tile, tile, 1))
    # Each block loads its rows of a once per tile step: a is read once per column of blocks.
    budget = {"a": batch * n * k * grid[0], "b": batch * m * k * grid[1]}
    for name, allowed in budget.items():
        reads = record.total("read", "global", name)
        assert reads <= allowed, (
            f"global reads of {name}: measured {reads}, budget {allowed} (about 2 * k / TILE = "
            f"{2 * k / tile:g} reads per output element for a and b together; a thread that reads its "
            f"whole row and column reads 2 * k = {2 * k}): stage TILE x TILE tiles in shared memory")
    assert record.total("write", "global", "out") == out.numel(), "write each output element once"
