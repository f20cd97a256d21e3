"""Chapter 05 edge cases: rows of one column, on the CPU (5.4, 5.5) and the GPU (5.6, 5.7).

A LayerNorm over one column normalizes every value to 0 (out is the bias, rstd is
1 / sqrt(eps)). A kernel that loads several columns at once (16 bytes: two float64 or
four float32) must not take that path for a row shorter than one such load; the
other tests' rows have at least two columns.
"""
from __future__ import annotations

import pytest
import torch

from minikernel import Tensor
from minikernel.norm import native_layer_norm, native_layer_norm_backward
from tests.ch05.strategies import randn, tolerance
from tests.ch05.test_layer_norm_gpu import assert_close, gpu

pytestmark = pytest.mark.xdist_group("ch05-gpu")

DTYPES = [torch.float32, torch.float64]


def _on(device, t):
    if t is None:
        return None
    return gpu(t) if device == "cuda" else Tensor.from_torch(t)


def _check(device, got, expected):
    for mine, theirs in zip(got, expected):
        if device == "cuda":
            assert_close(mine, theirs)
            continue
        assert mine.shape == tuple(theirs.shape), f"shape {mine.shape} != torch's {tuple(theirs.shape)}"
        torch.testing.assert_close(mine.to_torch(), theirs, **tolerance(theirs.dtype))


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("device", [pytest.param("cpu", marks=pytest.mark.exercise("5.4")),
                                    pytest.param("cuda", marks=pytest.mark.exercise("5.6"))])
def test_forward_of_one_column_rows(device, dtype, affine):
    x = randn((4, 1), dtype, 40, shift=3.0)
    w, b = (randn((1,), dtype, 41), randn((1,), dtype, 42)) if affine else (None, None)
    got = native_layer_norm(_on(device, x), (1,), _on(device, w), _on(device, b), 1e-5)
    expected = torch.native_layer_norm(x, (1,), w, b, 1e-5)
    _check(device, got, expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("device", [pytest.param("cpu", marks=pytest.mark.exercise("5.5")),
                                    pytest.param("cuda", marks=pytest.mark.exercise("5.7"))])
def test_backward_of_one_column_rows(device, dtype):
    x, dy = randn((4, 1), dtype, 43, shift=3.0), randn((4, 1), dtype, 44)
    w, b = randn((1,), dtype, 45), randn((1,), dtype, 46)
    _, mean, rstd = torch.native_layer_norm(x, (1,), w, b, 1e-5)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, (1,), mean, rstd, w, b, [True, True, True])
    got = native_layer_norm_backward(*(_on(device, t) for t in (dy, x)), (1,),
                                     *(_on(device, t) for t in (mean, rstd, w, b)))
    _check(device, got, expected)
