"""Exercises 5.6 and 5.7: the LayerNorm kernels on the GPU (a real one, or numba's CUDA simulator).

The simulator runs one Python thread per CUDA thread, so the sizes are tiny; rows
are still longer than a block (``NORM_THREADS`` is 8 there), so every thread
handles several columns. A last test lowers the kernels to NVVM IR for a real GPU.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings

from minikernel import Tensor
from minikernel.norm import native, native_layer_norm, native_layer_norm_backward
from minikernel.norm.sizes import NORM_THREADS
from tests import lowering
from tests.ch05.strategies import layer_norm_cases, randn, tolerance

FEW = settings(max_examples=6)
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("ch05-gpu")  # `lowered` compiles the GPU kernels once: one worker


def gpu(t):
    return None if t is None else Tensor.from_torch(t).cuda()


def from_gpu(m: Tensor) -> torch.Tensor:
    assert m.device.type == "cuda", f"the result is on {m.device}, not cuda"
    return m.cpu().to_torch()


def assert_close(got: Tensor, expected: torch.Tensor, n: int = 1) -> None:
    assert got.shape == tuple(expected.shape), f"shape {got.shape} != torch's {tuple(expected.shape)}"
    torch.testing.assert_close(from_gpu(got), expected, equal_nan=True, **tolerance(expected.dtype, n))


# ------------------------------------------------------------------ 5.6 forward
@pytest.mark.exercise("5.6")
@FEW
@given(layer_norm_cases(max_lead=2, max_norm=2, max_side=2 * NORM_THREADS + 3))
def test_forward_on_cuda_matches_native_layer_norm(case):
    x, shape, w, b = case
    if x.numel() > 4 * (2 * NORM_THREADS + 3):
        x = x.reshape(-1, *shape)[:2].reshape(-1, *shape)  # at most two rows: the simulator is slow
    got = native_layer_norm(gpu(x), shape, gpu(w), gpu(b), 1e-5)
    expected = torch.native_layer_norm(x, shape, w, b, 1e-5)
    for mine, theirs in zip(got, expected):
        assert_close(mine, theirs, math.prod(shape))


@pytest.mark.exercise("5.6")
def test_forward_on_cuda_rows_longer_than_a_block():
    x = randn((3, 2 * NORM_THREADS + 5), torch.float64, 30, shift=100.0)
    w, b = randn((x.shape[1],), torch.float64, 31), randn((x.shape[1],), torch.float64, 32)
    got = native_layer_norm(gpu(x), (x.shape[1],), gpu(w), gpu(b), 1e-5)
    for mine, theirs in zip(got, torch.native_layer_norm(x, (x.shape[1],), w, b, 1e-5)):
        torch.testing.assert_close(from_gpu(mine), theirs, rtol=1e-10, atol=1e-10)


@pytest.mark.exercise("5.6")
def test_forward_on_cuda_short_rows_and_a_strided_input():
    x = randn((3, 5), torch.float32, 33).t()  # (5, 3), not contiguous; rows shorter than a block
    got = native_layer_norm(gpu(x), (3,), None, None, 1e-5)
    for mine, theirs in zip(got, torch.native_layer_norm(x, (3,), None, None, 1e-5)):
        assert_close(mine, theirs)


@pytest.mark.exercise("5.6")
@pytest.mark.parametrize("n", [2, 3, 4, 2 * NORM_THREADS, 8 * NORM_THREADS + 2, 8 * NORM_THREADS + 4,
                               16 * NORM_THREADS + 4])
@pytest.mark.parametrize("dtype, offset", [(torch.float32, o) for o in range(4)] + [(torch.float64, o) for o in range(2)])
def test_forward_on_cuda_rows_of_any_length_at_any_offset(dtype, n, offset):
    # A kernel may load several columns at once when a row's bytes allow it (16 bytes: four
    # float32 or two float64 columns), and must then still handle the rest; a storage
    # offset shifts every row off the 16-byte boundary, by each number of columns it can be
    # off by (0-3 float32, 0-1 float64). Lengths past 8 and 16 blocks are longer than a kernel
    # may keep in registers.
    flat = randn((offset + 3 * n,), dtype, 34, shift=5.0)
    x = Tensor.from_torch(flat).cuda()[offset:].view(3, n)
    assert x.storage_offset() == offset
    w, b = randn((n,), dtype, 35), randn((n,), dtype, 36)
    got = native_layer_norm(x, (n,), gpu(w), gpu(b), 1e-5)
    for mine, theirs in zip(got, torch.native_layer_norm(flat[offset:].view(3, n), (n,), w, b, 1e-5)):
        assert_close(mine, theirs, n)


# ------------------------------------------------------------------ 5.7 backward
@pytest.mark.exercise("5.7")
@FEW
@given(layer_norm_cases(max_lead=2, max_norm=2, max_side=2 * NORM_THREADS + 3))
def test_backward_on_cuda_matches_native_layer_norm_backward(case):
    x, shape, w, b = case
    if x.numel() > 4 * (2 * NORM_THREADS + 3):
        x = x.reshape(-1, *shape)[:2].reshape(-1, *shape)
    dy = randn(x.shape, x.dtype, seed=34)
    _, mean, rstd = torch.native_layer_norm(x, shape, w, b, 1e-5)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, shape, mean, rstd, w, b,
                                                         [True, w is not None, b is not None])
    got = native_layer_norm_backward(gpu(dy), gpu(x), shape, gpu(mean), gpu(rstd), gpu(w), gpu(b))
    rows = x.numel() // math.prod(shape)
    for mine, theirs, n in zip(got, expected, (math.prod(shape), rows, rows)):
        if theirs is None:
            assert mine is None
        else:
            assert_close(mine, theirs, n)


@pytest.mark.exercise("5.7")
def test_backward_on_cuda_is_autograds_gradient_in_float64():
    n = 2 * NORM_THREADS + 1
    x = randn((3, n), torch.float64, 35, shift=1.0).requires_grad_()
    w, b = randn((n,), torch.float64, 36).requires_grad_(), randn((n,), torch.float64, 37).requires_grad_()
    dy = randn((3, n), torch.float64, 38)
    expected = torch.autograd.grad(torch.nn.functional.layer_norm(x, (n,), w, b), (x, w, b), dy)
    _, mean, rstd = torch.native_layer_norm(x.detach(), (n,), w.detach(), b.detach(), 1e-5)
    got = native_layer_norm_backward(gpu(dy), gpu(x.detach()), (n,), gpu(mean), gpu(rstd), gpu(w.detach()),
                                     gpu(b.detach()))
    for mine, theirs in zip(got, expected):
        torch.testing.assert_close(from_gpu(mine), theirs, rtol=1e-10, atol=1e-10)


# ------------------------------------------------ the same kernels, natively
_LOWER = textwrap.dedent("""
    import os, types as pytypes
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    import minikernel
    from minikernel.norm import gpu
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda.compiler import compile_cuda
    from numba import types
    # device functions ask the current device for its compute capability; pretend one
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(8, 0))
    for dt in (types.float32, types.float64):
        M, V = dt[:, ::1], dt[::1]
        sigs = {"layer_norm_forward_gpu": (M, V, V, types.float64, M, V, V),
                "layer_norm_backward_gpu": (M, M, V, V, V, M),
                "layer_norm_param_grads_gpu": (M, M, V, V, V, V)}
        for name, sig in sigs.items():
            try:
                compile_cuda(getattr(gpu, name), types.void, sig, cc=(8, 0))
                print("LOWERED", name, dt, flush=True)
            except Exception as err:
                print("FAILED", name, dt, type(err).__name__, str(err).replace(chr(10), " ")[:1500], flush=True)
""")


@pytest.fixture(scope="module")
def lowered() -> str:
    """The active LayerNorm kernels lowered for a real GPU (``tests.lowering``), built from
    minikernel's and the references' norm modules and the device choice."""
    sources = [ROOT / "minikernel" / "device.py", ROOT / "minikernel" / "numba_setup.py"]
    return lowering.lowered(_LOWER, sources + lowering.python_files("minikernel/norm", "solutions/norm"))


@pytest.mark.parametrize("names", [
    pytest.param(("forward",), marks=pytest.mark.exercise("5.6")),
    pytest.param(("backward", "param_grads"), marks=pytest.mark.exercise("5.7")),
])
def test_gpu_kernels_compile_for_a_real_gpu(names, lowered):
    for key in names:
        kernel = native.KERNELS["cuda"][key]
        kernel.check_implemented()
        lines = [line for line in lowered.splitlines() if f" {kernel.name} " in line]
        assert len(lines) == 2 and all(line.startswith("LOWERED") for line in lines), "\n".join(lines)
