"""Exercises 2.6–2.9: the GPU kernels, on a real GPU or numba's CUDA simulator.

The simulator runs one Python thread per CUDA thread, so the sizes here are tiny
(a few blocks); they still cross block and tile boundaries, since ``sizes.py``
makes blocks and tiles small on the simulator.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings, strategies as st

from minikernel import Tensor
from minikernel.aten import binary_ops, reduce_ops
from minikernel.kernels import jit, launch, sizes
from minikernel.kernels.scalar_ops import BINARY, MAX, SUM, UNARY
from tests import lowering
from tests.ch02.strategies import assert_values, blank_like_contiguous, broadcastable_pair, laid_out, tensors
from tests.ch02.test_cpu_kernels import (
    BINARY_NAMES,
    UNARY_NAMES,
    _random,
    _unary_dtype,
    assert_same_error,
    matmul_shapes,
)

FEW = settings(max_examples=8)
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("ch02-gpu")  # `lowered` compiles every GPU kernel once: one worker


def gpu_args(t: torch.Tensor):
    """(device storage, shape, strides, offset) of a torch tensor, copied to the GPU."""
    from numba import cuda

    m = Tensor.from_torch(t)
    return (cuda.to_device(m._storage), launch.ints(t.shape, "cuda"), launch.ints(t.stride(), "cuda"),
            t.storage_offset())


def copy_back(device_storage, t: torch.Tensor) -> None:
    """Copy a kernel's output storage into the torch tensor it was made from."""
    Tensor.from_torch(t)._storage[...] = device_storage.copy_to_host()


def on_gpu(t: torch.Tensor) -> Tensor:
    return Tensor.from_torch(t).cuda()


def as_copied(t: torch.Tensor) -> torch.Tensor:
    """``t`` laid out as its device copy is: torch's ``t.cuda()`` is ``empty_like(t).copy_(t)``,
    which closes gaps (a sliced view) and may reorder size-1 dimensions, so the result
    strides of an op on the copy are those of the op on this, not on ``t``."""
    return torch.empty_like(t).copy_(t)


def from_gpu(m: Tensor) -> torch.Tensor:
    assert m.device.type == "cuda", f"the result is on {m.device}, not cuda"
    return m.cpu().to_torch()


# ------------------------------------------------------------------ 2.6 map
@pytest.mark.exercise("2.6")
@FEW
@given(tensors(max_dims=3, max_side=3, nonempty=True), st.sampled_from(UNARY_NAMES), st.data())
def test_gpu_map_kernel_on_raw_headers(t, name, data):
    assume(t.dim() >= 1)
    expected = getattr(torch, name)(t)
    out = laid_out(blank_like_contiguous(t.shape, _unary_dtype(name, t.dtype)), data)
    o_storage, shape, o_strides, o_offset = gpu_args(out)
    a_storage, _, a_strides, a_offset = gpu_args(t)
    blocks = (t.numel() + sizes.THREADS - 1) // sizes.THREADS
    launch.kernel("cuda", "map").launch(blocks, sizes.THREADS, UNARY[name], o_storage, shape, o_strides, o_offset,
                                        a_storage, a_strides, a_offset)
    copy_back(o_storage, out)
    assert_values(out, expected)


@pytest.mark.exercise("2.6")
@FEW
@given(tensors(max_dims=3, max_side=4), st.sampled_from(UNARY_NAMES))
def test_unary_ops_on_cuda_match_torch(t, name):
    got = getattr(on_gpu(t), name)()
    expected = getattr(as_copied(t), name)()
    assert_values(from_gpu(got), expected)
    assert got.stride() == expected.stride()


@pytest.mark.exercise("2.6")
def test_cuda_contiguous_and_inplace_use_the_map_kernel():
    x = torch.arange(12.0).view(3, 4)
    m = on_gpu(x.t())
    c = m.contiguous()  # a copy made on the GPU by the map kernel
    assert c.device.type == "cuda" and c.is_contiguous() and torch.equal(from_gpu(c), x.t().contiguous())
    assert m.neg_() is m and torch.equal(from_gpu(m), -x.t())


# ------------------------------------------------------------------ 2.7 zip
@pytest.mark.exercise("2.7")
@FEW
@given(broadcastable_pair(max_dims=3, max_side=3), st.sampled_from(BINARY_NAMES),
       st.sampled_from([torch.float32, torch.int64]), st.data())
def test_gpu_zip_kernel_on_raw_headers(shapes, name, dtype, data):
    x = laid_out(_random(shapes[0], dtype, 1), data)
    y = laid_out(_random(shapes[1], dtype, 2), data)
    expected = getattr(torch, name)(x, y)
    assume(expected.dim() >= 1 and expected.numel() > 0)
    out = laid_out(blank_like_contiguous(expected.shape, expected.dtype), data)
    o_storage, shape, o_strides, o_offset = gpu_args(out)
    a_storage, _, a_strides, a_offset = gpu_args(torch.broadcast_to(x, expected.shape))
    b_storage, _, b_strides, b_offset = gpu_args(torch.broadcast_to(y, expected.shape))
    blocks = (expected.numel() + sizes.THREADS - 1) // sizes.THREADS
    launch.kernel("cuda", "zip").launch(blocks, sizes.THREADS, BINARY[name], o_storage, shape, o_strides, o_offset,
                                        a_storage, a_strides, a_offset, b_storage, b_strides, b_offset)
    copy_back(o_storage, out)
    assert_values(out, expected)


@pytest.mark.exercise("2.7")
@FEW
@given(broadcastable_pair(max_dims=3, max_side=4), st.sampled_from(BINARY_NAMES),
       st.sampled_from([(torch.float32, torch.float32), (torch.int64, torch.float64), (torch.int64, torch.int64)]),
       st.data())
def test_binary_ops_on_cuda_match_torch(shapes, name, dtypes, data):
    x = laid_out(_random(shapes[0], dtypes[0], 3), data)
    y = laid_out(_random(shapes[1], dtypes[1], 4), data)
    got = getattr(binary_ops, name)(on_gpu(x), on_gpu(y))
    expected = getattr(torch, name)(as_copied(x), as_copied(y))
    assert_values(from_gpu(got), expected)
    assert got.stride() == expected.stride()


@pytest.mark.exercise("2.7")
def test_cuda_scalars_and_device_mismatch():
    x = torch.tensor([[1.0, -2.0], [0.5, 4.0]])
    g = on_gpu(x)
    assert_values(from_gpu(2 * g - 1), 2 * x - 1)
    assert_values(from_gpu(1 / g), 1 / x)
    with pytest.raises(RuntimeError, match="same device"):
        g + Tensor.from_torch(x)


# --------------------------------------------------------------- 2.8 reduce
@pytest.mark.exercise("2.8")
@FEW
@given(tensors(max_dims=3, max_side=3, nonempty=True), st.sampled_from(["sum", "amax"]), st.data())
def test_gpu_reduce_kernel_on_raw_headers(t, name, data):
    assume(t.dim() >= 1)
    dim = data.draw(st.integers(0, t.dim() - 1))
    assume(name == "sum" or t.shape[dim] > 0)
    expected = getattr(torch, name)(t, dim, keepdim=True)
    out = laid_out(blank_like_contiguous(expected.shape, t.dtype), data)
    o_storage, o_shape, o_strides, o_offset = gpu_args(out)
    a_storage, a_shape, a_strides, a_offset = gpu_args(t)
    op = SUM if name == "sum" else MAX
    identity = reduce_ops._identity(op, np.dtype(str(t.dtype).removeprefix("torch.")))
    launch.kernel("cuda", "reduce").launch(expected.numel(), sizes.REDUCE_THREADS, op, identity, o_storage, o_shape,
                                           o_strides, o_offset, a_storage, a_shape, a_strides, a_offset, dim)
    copy_back(o_storage, out)
    assert_values(out, expected)


@pytest.mark.exercise("2.8")
@FEW
@given(st.integers(1, 2), st.integers(0, 2 * sizes.REDUCE_THREADS + 1), st.sampled_from([torch.float64, torch.int64]),
       st.sampled_from(["sum(1)", "sum(0, keepdim=True)", "amax(1)", "max()", "mean(1)"]), st.data())
def test_reductions_on_cuda_match_torch(rows, length, dtype, call, data):
    t = laid_out(_random((rows, length), dtype, 5), data)  # rows longer than a block: strided partial folds
    assume(length or call.startswith("sum"))
    assume(dtype.is_floating_point or not call.startswith("mean"))
    got = eval(f"g.{call}", {"g": on_gpu(t)})
    assert_values(from_gpu(got), eval(f"t.{call}", {"t": t}))


@pytest.mark.exercise("2.8")
def test_cuda_max_propagates_nan_and_refuses_empty_dims():
    x = torch.tensor([[1.0, float("nan"), 3.0], [-float("inf"), -1.0, -2.0]])
    g = on_gpu(x)
    assert_values(from_gpu(g.amax(1)), x.amax(1))
    e = torch.ones(2, 0)
    assert_same_error(lambda: on_gpu(e).amax(1), lambda: e.amax(1))


# --------------------------------------------------------------- 2.9 matmul
@pytest.mark.exercise("2.9")
@settings(max_examples=5)
@given(st.integers(1, 2), st.integers(1, 2 * sizes.TILE + 1), st.integers(0, 2 * sizes.TILE + 1),
       st.integers(1, 2 * sizes.TILE + 1), st.sampled_from([torch.float64, torch.int64]), st.data())
def test_gpu_matmul_kernel_on_raw_headers(batch, n, k, m, dtype, data):
    x = laid_out(_random((batch, n, k), dtype, 6), data)
    y = laid_out(_random((1, k, m), dtype, 7), data)
    expected = torch.matmul(x, y)
    out = blank_like_contiguous(expected.shape, dtype)
    o_storage, shape, o_strides, o_offset = gpu_args(out)
    a_storage, _, a_strides, a_offset = gpu_args(x)
    b_storage, _, b_strides, b_offset = gpu_args(y.expand(batch, k, m))
    grid = (math.ceil(m / sizes.TILE), math.ceil(n / sizes.TILE), batch)
    launch.kernel("cuda", "matmul").launch(grid, (sizes.TILE, sizes.TILE), o_storage, shape, o_strides, o_offset,
                                           a_storage, a_strides, a_offset, b_storage, b_strides, b_offset, k)
    copy_back(o_storage, out)
    assert_values(out, expected)


@pytest.mark.exercise("2.9")
@settings(max_examples=6)
@given(matmul_shapes(max_side=2 * sizes.TILE + 1, max_batch=1), st.data())
def test_matmul_on_cuda_matches_torch(shapes, data):
    x = laid_out(_random(shapes[0], torch.float64, 8), data)
    y = laid_out(_random(shapes[1], torch.float64, 9), data)
    got = on_gpu(x) @ on_gpu(y)
    expected = as_copied(x) @ as_copied(y)
    assert_values(from_gpu(got), expected)
    assert got.stride() == expected.stride()


@pytest.mark.exercise("2.9")
def test_cuda_matmul_seed_shapes():
    a, b = torch.arange(6.0).view(2, 3), torch.arange(12.0).view(3, 4)
    assert_values(from_gpu(on_gpu(a) @ on_gpu(b)), a @ b)
    assert_same_error(lambda: on_gpu(a) @ on_gpu(a), lambda: a @ a)


# ------------------------------------------------ the same kernels, natively
_LOWER = textwrap.dedent("""
    import os, sys, types as pytypes
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    import minikernel
    from minikernel.kernels import gpu
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda.compiler import compile_cuda
    from numba import types
    # device functions ask the current device for its compute capability; pretend one
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))
    I, i8 = types.int64[:], types.int64
    for dt, src in ((types.float32, types.float32), (types.float32, types.int64)):  # and exp(int64) -> float32
        A, S = dt[:], src[:]
        sigs = {"gpu_map": (i8, A, I, I, i8, S, I, i8), "gpu_zip": (i8, A, I, I, i8, S, I, i8, S, I, i8),
                "gpu_reduce": (i8, dt, A, I, I, i8, S, I, I, i8, i8),
                "gpu_matmul": (A, I, I, i8, S, I, i8, S, I, i8, i8)}
        for name, sig in sigs.items():
            if name != "gpu_map" and dt != src:
                continue
            try:
                compile_cuda(getattr(gpu, name), types.void, sig, cc=(8, 0))
                print("LOWERED", name, dt, src, flush=True)
            except Exception as err:
                print("FAILED", name, dt, src, type(err).__name__, str(err).replace(chr(10), " ")[:1500], flush=True)
""")


@pytest.fixture(scope="module")
def lowered() -> str:
    """The active GPU kernels lowered for a real GPU (``tests.lowering``): what they are
    built from is minikernel's and the references' strides and kernels (whichever
    MINIKERNEL_SOLUTIONS picks, both are read)."""
    sources = [ROOT / "minikernel" / "strides.py", ROOT / "solutions" / "strides.py"]
    return lowering.lowered(_LOWER, sources + lowering.python_files("minikernel/kernels", "solutions/kernels"))


@pytest.mark.parametrize("name", [pytest.param("map", marks=pytest.mark.exercise("2.6")),
                                  pytest.param("zip", marks=pytest.mark.exercise("2.7")),
                                  pytest.param("reduce", marks=pytest.mark.exercise("2.8")),
                                  pytest.param("matmul", marks=pytest.mark.exercise("2.9"))])
def test_gpu_kernel_compiles_for_a_real_gpu(name, request):
    # The kernel *and the index helpers it calls* (1.2, 2.1) must be written: a stub
    # helper would fail to lower and read as a wrong kernel instead of BLOCKED. Checked
    # before the (slow) lowering runs.
    jit.raise_if_unfinished(launch.kernel("cuda", name).function)
    lowered = request.getfixturevalue("lowered")
    lines = [line for line in lowered.splitlines() if f" gpu_{name} " in line]
    assert lines and all(line.startswith("LOWERED") for line in lines), "\n".join(lines)
