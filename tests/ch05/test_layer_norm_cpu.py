"""Exercises 5.4 and 5.5: LayerNorm forward and backward kernels on the CPU, against torch.

Forward: ``torch.native_layer_norm`` (out, mean, rstd). Backward: autograd's own
``torch.ops.aten.native_layer_norm_backward`` and, in float64, ``torch.autograd.grad``
of ``F.layer_norm``. The backward tests take ``mean``/``rstd`` from torch, so they
need only exercise 5.5.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings

from minikernel import Tensor
from minikernel.norm import native, native_layer_norm, native_layer_norm_backward
from minikernel.norm.sizes import CPU_ROWS_PER_TASK
from tests.ch05.strategies import layer_norm_cases, laid_out, mk, randn, tolerance

LOOSE = settings(max_examples=30)


def assert_close(got: Tensor, expected: torch.Tensor, n: int = 1) -> None:
    assert isinstance(got, Tensor), f"expected a minikernel Tensor, got {type(got).__name__}"
    assert got.shape == tuple(expected.shape), f"shape {got.shape} != torch's {tuple(expected.shape)}"
    assert got.device.type == "cpu" and str(got.dtype) == str(expected.dtype).removeprefix("torch.")
    torch.testing.assert_close(got.to_torch(), expected, equal_nan=True, **tolerance(expected.dtype, n))


# ------------------------------------------------------------------ 5.4 forward
@pytest.mark.exercise("5.4")
@LOOSE
@given(layer_norm_cases())
def test_forward_matches_native_layer_norm(case):
    x, shape, w, b = case
    got = native_layer_norm(mk(x), shape, mk(w), mk(b), 1e-5)
    expected = torch.native_layer_norm(x, shape, w, b, 1e-5)
    for name, mine, theirs in zip(("out", "mean", "rstd"), got, expected):
        assert mine.shape == tuple(theirs.shape), f"{name}: shape {mine.shape} != torch's {tuple(theirs.shape)}"
        assert_close(mine, theirs, math.prod(shape))


@pytest.mark.exercise("5.4")
def test_the_seed_examples():
    """2-D (B, C) with the biased variance written out by hand, and a (C1, C2) normalized_shape."""
    x, w, b = randn((3, 4), torch.float32, 1), randn((4,), torch.float32, 2), randn((4,), torch.float32, 3)
    out = native.layer_norm(mk(x), (4,), mk(w), mk(b), eps=1e-5)
    by_hand = (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, keepdim=True) * (4 - 1) / 4 + 1e-5) * w + b
    assert_close(out, by_hand)
    assert_close(out, F.layer_norm(x, (4,), w, b, eps=1e-5))
    x4, w2, b2 = randn((1, 2, 4, 3), torch.float32, 4), randn((4, 3), torch.float32, 5), randn((4, 3), torch.float32, 6)
    assert_close(native.layer_norm(mk(x4), [4, 3], mk(w2), mk(b2)), F.layer_norm(x4, [4, 3], w2, b2))


@pytest.mark.exercise("5.4")
@pytest.mark.parametrize("eps", [1e-5, 1e-2, 0.0])
def test_eps_and_constant_rows(eps):
    x = torch.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 6.0]], dtype=torch.float64)
    got = native_layer_norm(mk(x), (3,), None, None, eps)
    expected = torch.native_layer_norm(x, (3,), None, None, eps)
    for mine, theirs in zip(got, expected):  # a constant row: 0 * rsqrt(eps), inf rstd when eps is 0
        assert_close(mine, theirs)


@pytest.mark.exercise("5.4")
def test_many_rows_run_in_parallel_and_large_offsets_do_not_cancel():
    x = randn((300, 150), torch.float32, 7, scale=1e-2, shift=1e4)  # 45000 elements: several threads
    w, b = randn((150,), torch.float32, 8), randn((150,), torch.float32, 9)
    out, mean, rstd = native_layer_norm(mk(x), (150,), mk(w), mk(b), 1e-5)
    t_out, t_mean, t_rstd = torch.native_layer_norm(x.double(), (150,), w.double(), b.double(), 1e-5)
    torch.testing.assert_close(mean.to_torch().double(), t_mean, rtol=1e-6, atol=0)
    torch.testing.assert_close(rstd.to_torch().double(), t_rstd, rtol=1e-3, atol=0)  # two passes: no cancellation
    torch.testing.assert_close(out.to_torch().double(), t_out, rtol=1e-3, atol=1e-3)


@pytest.mark.exercise("5.4")
def test_does_not_write_into_the_input():
    x = randn((4, 6), torch.float64, 10)
    kept = x.clone()
    out, _, _ = native_layer_norm(mk(x), (6,), None, None, 1e-5)
    assert torch.equal(x, kept)
    assert out.untyped_storage().data_ptr() != Tensor.from_torch(x).untyped_storage().data_ptr()


# ------------------------------------------------------------------ 5.5 backward
def _torch_backward(dy, x, shape, w, b, eps=1e-5):
    _, mean, rstd = torch.native_layer_norm(x, shape, w, b, eps)
    mask = [True, w is not None, b is not None]
    return mean, rstd, torch.ops.aten.native_layer_norm_backward(dy, x, shape, mean, rstd, w, b, mask)


@pytest.mark.exercise("5.5")
@LOOSE
@given(layer_norm_cases())
def test_backward_matches_native_layer_norm_backward(case):
    x, shape, w, b = case
    dy = randn(x.shape, x.dtype, seed=x.numel())
    mean, rstd, expected = _torch_backward(dy, x, shape, w, b)
    got = native_layer_norm_backward(mk(dy), mk(x), shape, mk(mean), mk(rstd), mk(w), mk(b))
    n, rows = math.prod(shape), x.numel() // max(math.prod(shape), 1)
    if x.dtype == torch.float32 and x.numel():
        # dx = rstd/n (n g - Σg - x̂ Σ(g x̂)), g = dy·w: x̂'s rounding (x's rounding times rstd,
        # up to 316 for a row of equal values, see dw below) enters through x̂ Σ(g x̂), which
        # changes dx by up to 2 rstd · noise · |g| · (|x̂| + noise); negligible unless rstd is large.
        noise = 8 * torch.finfo(torch.float32).eps * x.abs().max().item() * rstd.max().item()
        g = (dy * (w if w is not None else 1)).abs().max().item()
        xhat = ((x.reshape(rows, n) - mean.reshape(rows, 1)) * rstd.reshape(rows, 1)).abs().max().item()
        atol = tolerance(x.dtype, n)["atol"] + 2 * rstd.max().item() * noise * g * (xhat + noise)
        torch.testing.assert_close(got[0].to_torch(), expected[0], rtol=2e-4, atol=atol, equal_nan=True)
    else:
        assert_close(got[0], expected[0], n)
    for name, mine, theirs in (("dw", got[1], expected[1]), ("db", got[2], expected[2])):
        if theirs is None:
            assert mine is None, f"{name}: the layer has no such parameter, so torch returns None"
        elif name == "dw" and x.dtype == torch.float32 and x.numel():
            # dw sums dy * xhat, and xhat = (x - mean) * rstd carries x's rounding times
            # rstd: up to 1/sqrt(eps) = 316 for a row of equal values, where xhat is pure
            # rounding noise on both sides. The bound below is that noise, summed over rows.
            noise = 8 * torch.finfo(torch.float32).eps * x.abs().max().item() * rstd.max().item()
            atol = tolerance(x.dtype, rows)["atol"] + noise * dy.abs().max().item() * rows
            torch.testing.assert_close(mine.to_torch(), theirs, rtol=2e-4, atol=atol, equal_nan=True)
        else:
            assert_close(mine, theirs, rows)


@pytest.mark.exercise("5.5")
@pytest.mark.parametrize("shape", [(5,), (3, 4)])
def test_backward_is_autograds_gradient_in_float64(shape):
    """``torch.autograd.grad`` of ``F.layer_norm`` is the oracle, weight and bias included."""
    x = randn((2, 3) + shape, torch.float64, 11, shift=2.0).requires_grad_()
    w = randn(shape, torch.float64, 12).requires_grad_()
    b = randn(shape, torch.float64, 13).requires_grad_()
    dy = randn(x.shape, torch.float64, 14)
    y = F.layer_norm(x, shape, w, b, 1e-5)
    expected = torch.autograd.grad(y, (x, w, b), dy)
    _, mean, rstd = torch.native_layer_norm(x.detach(), shape, w.detach(), b.detach(), 1e-5)
    got = native_layer_norm_backward(mk(dy), mk(x.detach()), shape, mk(mean), mk(rstd), mk(w.detach()),
                                     mk(b.detach()))
    for mine, theirs in zip(got, expected):
        torch.testing.assert_close(mine.to_torch(), theirs, rtol=1e-10, atol=1e-10)


@pytest.mark.exercise("5.5")
def test_backward_many_rows_sum_dw_db_over_every_task():
    rows = 3 * CPU_ROWS_PER_TASK + 5  # several tasks, the last one short
    x, dy = randn((rows, 200), torch.float64, 15), randn((rows, 200), torch.float64, 16)
    w, b = randn((200,), torch.float64, 17), randn((200,), torch.float64, 18)
    mean, rstd, expected = _torch_backward(dy, x, (200,), w, b)
    got = native_layer_norm_backward(mk(dy), mk(x), (200,), mk(mean), mk(rstd), mk(w), mk(b))
    for mine, theirs in zip(got, expected):
        torch.testing.assert_close(mine.to_torch(), theirs, rtol=1e-9, atol=1e-9)


@pytest.mark.exercise("5.5")
def test_output_mask_and_layouts():
    x = laid_out(randn((4, 6), torch.float64, 19), _Pick("transposed"))
    dy = randn((4, 6), torch.float64, 20)[:, ::1]
    w = randn((6,), torch.float64, 21)
    mean, rstd, expected = _torch_backward(dy, x, (6,), w, None)
    dx, dw, db = native_layer_norm_backward(mk(dy), mk(x), (6,), mk(mean), mk(rstd), mk(w), None, [True, False, True])
    assert dw is None and db is None  # not asked for / no bias
    torch.testing.assert_close(dx.to_torch(), expected[0])


class _Pick:
    """A stand-in for hypothesis' ``data`` that always draws ``choice``."""

    def __init__(self, choice):
        self.choice = choice

    def draw(self, strategy):
        return self.choice


# ------------------------------------------------------------------ plumbing
@pytest.mark.parametrize("x, shape, w, b", [
    (torch.ones(2, 3), (4,), None, None),
    (torch.ones(2, 3, 4), (3,), None, None),
    (torch.ones(2, 3, 4), (5, 3, 4), None, None),
    (torch.ones(2, 3, 4), (3, 4), torch.ones(4), None),
    (torch.ones(2, 3), (3,), None, torch.ones(2)),
    (torch.ones(2, 3), (), None, None),
])
def test_refusals_match_torch(x, shape, w, b):
    with pytest.raises(RuntimeError) as theirs:
        torch.native_layer_norm(x, shape, w, b, 1e-5)
    with pytest.raises(RuntimeError) as mine:
        native_layer_norm(mk(x), shape, mk(w), mk(b), 1e-5)
    assert type(mine.value) is RuntimeError and str(mine.value) == str(theirs.value)


def test_refusals_of_dtypes_and_devices():
    x = Tensor.from_torch(torch.ones(2, 3))
    with pytest.raises(RuntimeError, match="float32 and float64"):
        native_layer_norm(Tensor.from_torch(torch.ones(2, 3, dtype=torch.int64)), (3,), None, None, 1e-5)
    with pytest.raises(RuntimeError, match="weight has dtype float64 but input has float32"):
        native_layer_norm(x, (3,), Tensor.from_torch(torch.ones(3, dtype=torch.float64)), None, 1e-5)
    with pytest.raises(RuntimeError, match="same device"):
        native_layer_norm(x, (3,), Tensor.from_torch(torch.ones(3)).cuda(), None, 1e-5)
    with pytest.raises(TypeError, match="minikernel Tensor"):
        native_layer_norm(torch.ones(2, 3), (3,), None, None, 1e-5)


def test_empty_inputs_match_torch_without_a_kernel():
    for x, shape in ((torch.ones(0, 3), (3,)), (torch.ones(2, 0), (0,))):
        expected = torch.native_layer_norm(x, shape, None, None, 1e-5)
        got = native_layer_norm(mk(x), shape, None, None, 1e-5)
        for mine, theirs in zip(got, expected):
            assert mine.shape == tuple(theirs.shape)
            torch.testing.assert_close(mine.to_torch(), theirs, equal_nan=True)
    dx, dw, db = native_layer_norm_backward(mk(torch.ones(0, 3)), mk(torch.ones(0, 3)), (3,), mk(torch.ones(0, 1)),
                                            mk(torch.ones(0, 1)), mk(torch.ones(3)), mk(torch.ones(3)))
    assert dx.shape == (0, 3) and dw.tolist() == [0.0] * 3 and db.tolist() == [0.0] * 3


def test_kernels_are_registered_per_device():
    assert {k: v.name for k, v in native.KERNELS["cpu"].items()} == {
        "forward": "layer_norm_forward_cpu", "backward": "layer_norm_backward_cpu"}
    assert native.KERNELS["cuda"]["forward"].path == "gpu" and native.KERNELS["cpu"]["forward"].path == "cpu"
    assert native.check_inputs(Tensor.from_torch(torch.ones(2, 3, 4)), 4, None, None) == ((4,), 6, 4)  # an int
    assert native.check_inputs(Tensor.from_torch(torch.ones(2, 3, 4)), (3, 4), None, None) == ((3, 4), 2, 12)
